package progfile

import (
	"errors"
	"os"
	"syscall"
)

// Linux's O_PATH and ST_NOEXEC (golang.org/x/sys/unix's, which a test checks them against):
// this package keeps to the standard library's lowest layers, so that a package that imports it
// is initialised early in a program's start (internal/world/workerproc's prestart).
const (
	oPath    = 0x200000
	stNoexec = 0x8
)

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
	if err := syscall.Fstatfs(fd, &fs); err == nil && fs.Flags&stNoexec != 0 {
		return errors.New("it is on a noexec mount")
	}
	return nil
}
