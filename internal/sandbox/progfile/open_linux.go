package progfile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Open opens path with O_PATH|O_NOFOLLOW|O_CLOEXEC — a symbolic link is refused, not
// followed — and checks the file through that descriptor: checkStat's rules, on a mount that
// allows execution. Execute it through /proc/self/fd/N, so that the file checked is the file
// run. A missing file is an error that errors.Is(err, fs.ErrNotExist).
func Open(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := checkFD(fd); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

func checkFD(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if err := checkStat(st.Mode, st.Uid); err != nil {
		return err
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err == nil && fs.Flags&unix.ST_NOEXEC != 0 {
		return errors.New("it is on a noexec mount")
	}
	return nil
}
