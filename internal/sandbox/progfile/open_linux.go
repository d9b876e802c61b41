package progfile

import (
	"errors"
	"os"
	"syscall"
)

// oPath is O_PATH, which package syscall does not name (its value on every Linux port of
// Go; progfile_linux_test.go checks it against golang.org/x/sys/unix).
const oPath = 0x200000

// Open opens path with O_PATH|O_NOFOLLOW|O_CLOEXEC — a symbolic link is refused, not
// followed — and checks the file through that descriptor: checkStat's rules, on a mount that
// allows execution. Execute it through /proc/self/fd/N, so that the file checked is the file
// run. A missing file is an error that errors.Is(err, fs.ErrNotExist).
func Open(path string) (*os.File, error) {
	fd, err := syscall.Open(path, oPath|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := checkFD(fd); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

func checkFD(fd int) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return err
	}
	if err := checkStat(st.Mode, st.Uid); err != nil {
		return err
	}
	var fs syscall.Statfs_t
	// statfs's ST_NOEXEC has mount's MS_NOEXEC value.
	if err := syscall.Fstatfs(fd, &fs); err == nil && fs.Flags&syscall.MS_NOEXEC != 0 {
		return errors.New("it is on a noexec mount")
	}
	return nil
}
