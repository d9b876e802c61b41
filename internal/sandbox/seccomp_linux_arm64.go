package sandbox

import "golang.org/x/sys/unix"

const (
	nativeArch    = unix.AUDIT_ARCH_AARCH64
	x32Bit        = 0
	cloneFlagsArg = 0
)

var archDenied = []uint32{}
