//go:build linux || darwin

package layerfs

import (
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Resolution one name at a time, for a kernel without openat2 (macOS).
//
// Each folder on the way is opened on its own, relative to the descriptor
// of the folder before it, with O_NOFOLLOW and O_DIRECTORY, and the last
// name with O_NOFOLLOW: a symlink anywhere on the path is refused however
// and whenever it was swapped in, since no name is ever looked up through
// one, and ".." never occurs (clean drops it), so nothing above the
// starting folder is reachable. It is what openat2's RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS gives in one call; /proc's magic links, the third
// thing openat2 is asked to refuse, do not exist where this runs.

// walkOpen opens rel beneath dirfd with flags (no O_PATH: macOS has none).
func walkOpen(dirfd int, rel string, flags int) (int, error) {
	rel = clean(rel)
	parent, base, err := walkParent(dirfd, rel)
	if err != nil {
		return -1, err
	}
	if parent != dirfd {
		defer unix.Close(parent)
	}
	flags |= unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NOCTTY
	for tries := 0; ; tries++ {
		fd, err := unix.Openat(parent, base, flags, 0)
		switch {
		case err == nil:
			return fd, nil
		case err == unix.EINTR && tries < 64:
			continue
		case err == unix.ELOOP || err == unix.ENOTDIR || err == unix.ENOENT:
			return -1, notFollowed(parent, base, rel, err)
		case err == unix.ENXIO || err == unix.ENODEV || err == unix.EOPNOTSUPP:
			// Linux says ENXIO for a socket, macOS EOPNOTSUPP.
			return -1, &KindError{Path: rel, Kind: "socket or device", Err: ErrNotRegular}
		}
		return -1, &os.PathError{Op: "open", Path: rel, Err: err}
	}
}

// walkLstat is the status of rel itself: a symlink at the end is
// reported, one on the way refused.
func walkLstat(dirfd int, rel string) (*unix.Stat_t, error) {
	rel = clean(rel)
	var st unix.Stat_t
	if rel == "." {
		if err := unix.Fstat(dirfd, &st); err != nil {
			return nil, &os.PathError{Op: "stat", Path: rel, Err: err}
		}
		return &st, nil
	}
	parent, base, err := walkParent(dirfd, rel)
	if err != nil {
		return nil, err
	}
	if parent != dirfd {
		defer unix.Close(parent)
	}
	if err := unix.Fstatat(parent, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT || err == unix.ENOTDIR {
			return nil, &os.PathError{Op: "stat", Path: rel, Err: os.ErrNotExist}
		}
		return nil, &os.PathError{Op: "stat", Path: rel, Err: err}
	}
	return &st, nil
}

// walkParent opens the folder holding rel's last name, one folder at a
// time, and returns it (dirfd itself for a name directly in it, which the
// caller must not close) with that name; "." stands for dirfd itself.
func walkParent(dirfd int, rel string) (fd int, base string, err error) {
	names := strings.Split(rel, "/")
	fd = dirfd
	for i, n := range names[:len(names)-1] {
		next, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		for tries := 0; err == unix.EINTR && tries < 64; tries++ {
			next, err = unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			err = notFollowed(fd, n, strings.Join(names[:i+1], "/"), err)
		}
		if fd != dirfd {
			unix.Close(fd)
		}
		if err != nil {
			return -1, "", err
		}
		fd = next
	}
	return fd, names[len(names)-1], nil
}

// notFollowed says why name in the folder fd (rel from the start) could
// not be opened: ErrSymlink when it is a symlink — kernels differ in
// whether a symlink opened with O_NOFOLLOW and O_DIRECTORY fails with
// ELOOP or ENOTDIR, so it is asked, never inferred — else that it does not
// exist as the kind asked for.
func notFollowed(fd int, name, rel string, err error) error {
	var st unix.Stat_t
	if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return &KindError{Path: rel, Kind: "symlink", Err: ErrSymlink}
	}
	if err == unix.ELOOP {
		// A symlink that was swapped for something else meanwhile.
		return &KindError{Path: rel, Kind: "symlink", Err: ErrSymlink}
	}
	return &os.PathError{Op: "open", Path: rel, Err: os.ErrNotExist}
}
