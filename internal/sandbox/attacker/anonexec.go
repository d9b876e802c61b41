//go:build linux

package attacker

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// anonExec runs a copy of the program src from a file that has no name,
// the way an allowed interpreter would try to run a program it may not:
//
//	memfd           memfd_create, then execve("/proc/self/fd/N")
//	memfd-execveat  memfd_create, then execveat(N, "", AT_EMPTY_PATH)
//	memfd-ld.so     memfd_create, then the loader maps /proc/self/fd/N
//	tmpfile         open(dir, O_TMPFILE), reopened read-only, execve("/proc/self/fd/N")
//	deleted         a file made in dir, opened, unlinked, execve("/proc/self/fd/N")
//	deleted-execveat  the same file, execveat(N, "", AT_EMPTY_PATH)
//	deleted-ld.so   the same file mapped by the loader
//
// args are KIND DIR LOADER SRC ARG...; on success it does not return.
func anonExec(args []string) int {
	if len(args) < 4 {
		fmt.Fprintln(os.Stderr, "attacker: anon-exec KIND DIR LOADER SRC ARG...")
		return 2
	}
	kind, dir, loader, src, rest := args[0], args[1], args[2], args[3], args[4:]
	code, err := os.ReadFile(src)
	if err != nil {
		return report(err, "")
	}
	var fd int
	switch kind {
	case "memfd", "memfd-execveat", "memfd-ld.so":
		// No MFD_CLOEXEC: the loader opens /proc/self/fd/N after the exec.
		fd, err = unix.MemfdCreate("victim", 0)
		if err == nil {
			err = writeAll(fd, code)
		}
	case "tmpfile":
		var w int
		w, err = unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR, 0o755)
		if err == nil {
			err = writeAll(w, code)
		}
		if err == nil {
			// A file open for writing cannot be executed (ETXTBSY): keep
			// a read-only descriptor of the same nameless inode.
			fd, err = unix.Open(procFd(w), unix.O_RDONLY, 0)
			unix.Close(w)
		}
	case "deleted", "deleted-execveat", "deleted-ld.so":
		path := filepath.Join(dir, "anon-victim")
		if err = os.WriteFile(path, code, 0o755); err == nil {
			fd, err = unix.Open(path, unix.O_RDONLY, 0)
			if err == nil {
				err = os.Remove(path)
			}
		}
	default:
		fmt.Fprintln(os.Stderr, "attacker: unknown anon-exec kind", kind)
		return 2
	}
	if err != nil {
		return report(err, "")
	}
	switch kind {
	case "memfd-execveat", "deleted-execveat":
		argv := append([]string{"victim"}, rest...)
		err = execveat(fd, argv)
	case "memfd-ld.so", "deleted-ld.so":
		err = unix.Exec(loader, append([]string{loader, procFd(fd)}, rest...), os.Environ())
	default:
		err = unix.Exec(procFd(fd), append([]string{"victim"}, rest...), os.Environ())
	}
	return report(err, "")
}

func procFd(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// execveat is fexecve: the descriptor itself is executed.
func execveat(fd int, argv []string) error {
	argvp, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return err
	}
	envp, err := syscall.SlicePtrFromStrings(os.Environ())
	if err != nil {
		return err
	}
	empty, _ := syscall.BytePtrFromString("")
	_, _, e := unix.Syscall6(unix.SYS_EXECVEAT, uintptr(fd), uintptr(unsafe.Pointer(empty)), uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])), unix.AT_EMPTY_PATH, 0)
	return e
}
