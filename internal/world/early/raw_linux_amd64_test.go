package early

import (
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestRawMatchesSyscall: each number and flag raw_linux_amd64.go gives the kernel is package
// syscall's, and struct stat is laid out as isRegular reads it.
func TestRawMatchesSyscall(t *testing.T) {
	t.Parallel()
	fdcwd := unix.AT_FDCWD
	for _, c := range []struct {
		name      string
		own, want uintptr
	}{
		{"SYS_READ", sysRead, syscall.SYS_READ},
		{"SYS_WRITE", sysWrite, syscall.SYS_WRITE},
		{"SYS_CLOSE", sysClose, syscall.SYS_CLOSE},
		{"SYS_FLOCK", sysFlock, syscall.SYS_FLOCK},
		{"SYS_EXIT_GROUP", sysExitGroup, syscall.SYS_EXIT_GROUP},
		{"SYS_OPENAT", sysOpenat, syscall.SYS_OPENAT},
		{"SYS_NEWFSTATAT", sysNewfstatat, syscall.SYS_NEWFSTATAT},
		{"SYS_LINKAT", sysLinkat, syscall.SYS_LINKAT},
		{"AT_FDCWD", atFDCWD, uintptr(fdcwd)},
		{"AT_SYMLINK_NOFOLLOW", atSymlinkNofollow, unix.AT_SYMLINK_NOFOLLOW},
		{"O_RDONLY", oRDONLY, syscall.O_RDONLY},
		{"O_RDWR", oRDWR, syscall.O_RDWR},
		{"O_CREAT", oCREAT, syscall.O_CREAT},
		{"O_NOFOLLOW", oNOFOLLOW, syscall.O_NOFOLLOW},
		{"O_CLOEXEC", oCLOEXEC, syscall.O_CLOEXEC},
		{"LOCK_EX", lockEX, syscall.LOCK_EX},
		{"LOCK_NB", lockNB, syscall.LOCK_NB},
		{"EINTR", eINTR, uintptr(syscall.EINTR)},
		{"EINVAL", eINVAL, uintptr(syscall.EINVAL)},
		{"S_IFMT", sIFMT, syscall.S_IFMT},
		{"S_IFREG", sIFREG, syscall.S_IFREG},
		{"sizeof(struct stat)", statSize, unsafe.Sizeof(syscall.Stat_t{})},
		{"offsetof(st_mode)", statModeAt, unsafe.Offsetof(syscall.Stat_t{}.Mode)},
		{"sizeof(st_mode)", 4, unsafe.Sizeof(syscall.Stat_t{}.Mode)},
	} {
		if c.own != c.want {
			t.Errorf("%s: %#x here, %#x in package syscall", c.name, c.own, c.want)
		}
	}
}
