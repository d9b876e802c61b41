package layerfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// resolve flags: beneath the directory, no symlink anywhere, no /proc
// magic links, and never the controlling terminal.
const resolve = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openat opens rel beneath d with no symlink resolution. A symlink on the
// way (or at the end, unless O_PATH is asked for) is ErrSymlink.
func (d *Dir) openat(rel string, flags int) (int, error) {
	if d.stepwise {
		return walkOpen(d.fd, rel, flags)
	}
	rel = clean(rel)
	flags |= unix.O_CLOEXEC | unix.O_NOFOLLOW
	if flags&unix.O_PATH == 0 {
		flags |= unix.O_NOCTTY // openat2 refuses it with O_PATH
	}
	how := unix.OpenHow{Flags: uint64(flags), Resolve: resolve}
	for tries := 0; ; tries++ {
		fd, err := unix.Openat2(d.fd, rel, &how)
		switch {
		case err == nil:
			return fd, nil
		case (err == unix.EINTR || err == unix.EAGAIN) && tries < 64:
			continue // EAGAIN: a rename raced the lookup
		case err == unix.ELOOP:
			return -1, &KindError{Path: rel, Kind: "symlink", Err: ErrSymlink}
		case err == unix.ENXIO || err == unix.ENODEV:
			return -1, &KindError{Path: rel, Kind: "socket or device", Err: ErrNotRegular}
		case err == unix.ENOENT || err == unix.ENOTDIR:
			return -1, &os.PathError{Op: "open", Path: rel, Err: os.ErrNotExist}
		case err == unix.EXDEV:
			return -1, &os.PathError{Op: "open", Path: rel, Err: errors.New("leaves the directory")}
		}
		return -1, &os.PathError{Op: "open", Path: rel, Err: err}
	}
}

// Lstat is the status of rel itself (a symlink is reported, not followed).
func (d *Dir) Lstat(rel string) (*unix.Stat_t, error) {
	if d.stepwise {
		return walkLstat(d.fd, rel)
	}
	fd, err := d.openat(rel, unix.O_PATH)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: rel, Err: err}
	}
	return &st, nil
}
