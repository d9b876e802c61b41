package layerfs

import "golang.org/x/sys/unix"

// openat opens rel beneath d with no symlink resolution: macOS has no
// openat2, so names are resolved one at a time (walk.go). A symlink on
// the way or at the end is ErrSymlink.
func (d *Dir) openat(rel string, flags int) (int, error) { return walkOpen(d.fd, rel, flags) }

// Lstat is the status of rel itself (a symlink is reported, not followed).
func (d *Dir) Lstat(rel string) (*unix.Stat_t, error) { return walkLstat(d.fd, rel) }
