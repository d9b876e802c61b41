//go:build !(linux && amd64)

package early

import "syscall"

// The system calls early makes where it has none of its own (raw_linux_amd64.go): package
// syscall's, which puts early's initialisation right after syscall's.

// lockFlags and lockMode open a world's lock file (OpenLock).
const (
	lockFlags = syscall.O_RDWR | syscall.O_CREAT | syscall.O_NOFOLLOW | syscall.O_CLOEXEC
	lockMode  = 0o600
)

func errnoOf(err error) uintptr {
	if err == nil {
		return 0
	}
	if e, ok := err.(syscall.Errno); ok && e != 0 {
		return uintptr(e)
	}
	return uintptr(syscall.EINVAL)
}

func openLock(path string) (int, uintptr) {
	fd, err := syscall.Open(path, lockFlags, lockMode)
	return fd, errnoOf(err)
}

func openRead(path string) (int, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	return fd, err == nil
}

func read(fd int, b []byte) (n int, again, ok bool) {
	n, err := syscall.Read(fd, b)
	return n, err == syscall.EINTR, err == nil
}

func closeFD(fd int) { syscall.Close(fd) }

func tryLock(fd int) bool { return syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) == nil }

// isRegular says whether path is a regular file, not following a symbolic link.
func isRegular(path string) bool {
	var st syscall.Stat_t
	return syscall.Lstat(path, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG
}

func link(src, dst string) bool { return syscall.Link(src, dst) == nil }

func write1(s string) { syscall.Write(1, []byte(s)) }

func exit0() { syscall.Exit(0) }
