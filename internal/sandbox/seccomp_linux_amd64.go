package sandbox

import "golang.org/x/sys/unix"

const (
	nativeArch    = unix.AUDIT_ARCH_X86_64
	x32Bit        = 0x40000000
	cloneFlagsArg = 0
)

// archDenied are x86's legacy calls: port I/O and uselib.
var archDenied = []uint32{
	unix.SYS_IOPL, unix.SYS_IOPERM, unix.SYS_USELIB,
}
