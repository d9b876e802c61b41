package early

import "unsafe"

// The system calls early makes on linux/amd64, without package syscall (which would put its
// initialisation behind syscall's and every package sorted before it). The numbers and flags
// are the kernel's for this architecture; raw_linux_amd64_test.go checks each against package
// syscall's.

func rawSyscall6(trap, a1, a2, a3, a4, a5, a6 uintptr) (r1, errno uintptr)

const (
	sysRead       = 0
	sysWrite      = 1
	sysClose      = 3
	sysFlock      = 73
	sysExitGroup  = 231
	sysOpenat     = 257
	sysNewfstatat = 262
	sysLinkat     = 265

	atFDCWD           = ^uintptr(99) // -100, AT_FDCWD
	atSymlinkNofollow = 0x100
	oRDONLY           = 0x0
	oRDWR             = 0x2
	oCREAT            = 0x40
	oNOFOLLOW         = 0x20000
	oCLOEXEC          = 0x80000
	lockEX            = 0x2
	lockNB            = 0x4
	eINTR             = 0x4
	eINVAL            = 0x16

	// struct stat on linux/amd64: 144 bytes, st_mode (32 bits) at 24
	statSize      = 144
	statModeAt    = 24
	sIFMT, sIFREG = 0o170000, 0o100000
)

// lockFlags and lockMode open a world's lock file (OpenLock).
const (
	lockFlags = oRDWR | oCREAT | oNOFOLLOW | oCLOEXEC
	lockMode  = 0o600
)

// cstring is s as the kernel reads a path: NUL-terminated. The call that takes it converts
// its address in its own argument list, which keeps it alive and in place for the call.
func cstring(s string) *byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return &b[0]
}

// hasNUL says whether s cannot be a path (package syscall refuses it with EINVAL): the kernel
// would read it cut at the NUL.
func hasNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

func openat(path string, flags, mode uintptr) (int, uintptr) {
	if hasNUL(path) {
		return -1, eINVAL
	}
	fd, errno := rawSyscall6(sysOpenat, atFDCWD, uintptr(unsafe.Pointer(cstring(path))), flags, mode, 0, 0)
	return int(fd), errno
}

func openLock(path string) (int, uintptr) { return openat(path, lockFlags, lockMode) }

func openRead(path string) (int, bool) {
	fd, errno := openat(path, oRDONLY|oCLOEXEC, 0)
	return fd, errno == 0
}

func read(fd int, b []byte) (n int, again, ok bool) {
	r, errno := rawSyscall6(sysRead, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), 0, 0, 0)
	return int(r), errno == eINTR, errno == 0
}

func closeFD(fd int) { rawSyscall6(sysClose, uintptr(fd), 0, 0, 0, 0, 0) }

func tryLock(fd int) bool {
	_, errno := rawSyscall6(sysFlock, uintptr(fd), lockEX|lockNB, 0, 0, 0, 0)
	return errno == 0
}

// isRegular says whether path is a regular file, not following a symbolic link.
func isRegular(path string) bool {
	if hasNUL(path) {
		return false
	}
	var st [statSize]byte
	_, errno := rawSyscall6(sysNewfstatat, atFDCWD, uintptr(unsafe.Pointer(cstring(path))), uintptr(unsafe.Pointer(&st[0])), atSymlinkNofollow, 0, 0)
	mode := uint32(st[statModeAt]) | uint32(st[statModeAt+1])<<8 | uint32(st[statModeAt+2])<<16 | uint32(st[statModeAt+3])<<24
	return errno == 0 && mode&sIFMT == sIFREG
}

func link(src, dst string) bool {
	if hasNUL(src) || hasNUL(dst) {
		return false
	}
	_, errno := rawSyscall6(sysLinkat, atFDCWD, uintptr(unsafe.Pointer(cstring(src))), atFDCWD, uintptr(unsafe.Pointer(cstring(dst))), 0, 0)
	return errno == 0
}

func write1(s string) {
	b := []byte(s)
	for len(b) > 0 {
		n, errno := rawSyscall6(sysWrite, 1, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0, 0, 0)
		if errno == eINTR {
			continue
		}
		if errno != 0 || n == 0 {
			return
		}
		b = b[n:]
	}
}

// exit0 ends the process at once: nothing of Go's exit runs (no deferred call is pending this
// early; a -race build's final report is skipped).
func exit0() {
	for {
		rawSyscall6(sysExitGroup, 0, 0, 0, 0, 0, 0)
	}
}
