package sandbox

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// hideInView covers a Policy.Hide path in the new root: a folder with an
// empty tmpfs (as home directories are covered), anything else with the
// empty file, both without setuid or devices. It returns an O_PATH
// descriptor of the tmpfs, to be made read-only once every mount point
// the policy exposes inside it exists (see setupNamespaces), or -1.
//
// Nothing at the path in the view built so far (a home or /tmp mask
// covers it already) means nothing to hide. A symlink where the parent
// found a real folder means something swapped a component since: the run
// fails rather than cover whatever the link points to instead.
func hideInView(path string) (int, error) {
	dst := newRoot + path
	fd, err := openNoSymlinks(dst)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return -1, nil
	}
	if err != nil {
		return -1, fmt.Errorf("hide %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return -1, fmt.Errorf("hide %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if err := unix.Mount("/empty", fdPath(fd), "", unix.MS_BIND, ""); err != nil {
			return -1, fmt.Errorf("hide %s: %w", path, err)
		}
		if err := setattr(dst, false, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, 0); err != nil {
			return -1, fmt.Errorf("hide %s: %w", path, err)
		}
		return -1, nil
	}
	if err := unix.Mount("tmpfs", fdPath(fd), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m"); err != nil {
		return -1, fmt.Errorf("hide %s: %w", path, err)
	}
	top, err := openNoSymlinks(dst)
	if err != nil {
		return -1, fmt.Errorf("hide %s: %w", path, err)
	}
	return top, nil
}
