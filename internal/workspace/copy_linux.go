package workspace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/forkbomb/forkbomb/internal/layerfs"
)

// copyTree copies src to dst (which must not exist): directories, regular
// files (by reflink when reflink is set and the filesystem shares blocks,
// else by copy), symlinks as they are, overlayfs whiteouts (character
// devices 0/0, which the kernel lets anyone make) and user.* extended
// attributes (overlayfs's opaque-directory marks). It reports whether every
// file was reflinked. src is a fork's tree or layer: it is read through
// layerfs, so no link is followed and no FIFO or device is opened.
func copyTree(src, dst string, reflink bool) (allReflinked bool, err error) {
	root, err := layerfs.Open(src)
	if err != nil {
		return false, err
	}
	defer root.Close()
	if err := os.Mkdir(dst, 0o700); err != nil {
		return false, err
	}
	if err := copyXattrs(root, ".", dst); err != nil {
		return false, err
	}
	allReflinked = reflink
	type dirMode struct {
		path string
		perm os.FileMode
	}
	dirs := []dirMode{{dst, os.FileMode(statPerm(root))}}
	err = root.Walk(layerfs.WalkLimits{}, func(e layerfs.WalkEntry) error {
		out := filepath.Join(dst, filepath.FromSlash(e.Rel))
		perm := os.FileMode(e.Stat.Mode & 0o7777)
		switch {
		case e.Kind == layerfs.KindDir:
			if err := os.Mkdir(out, perm.Perm()|0o700); err != nil {
				return err
			}
			dirs = append(dirs, dirMode{out, perm})
			return copyXattrs(root, e.Rel, out)
		case e.Kind == layerfs.KindSymlink:
			target, err := root.Readlink(e.Rel)
			if err != nil {
				return err
			}
			return os.Symlink(target, out)
		case e.Kind == layerfs.KindWhiteout && e.Stat.Mode&unix.S_IFMT == unix.S_IFCHR:
			if err := unix.Mknod(out, unix.S_IFCHR|uint32(perm.Perm()), 0); err != nil {
				return fmt.Errorf("copy whiteout %s: %w", e.Rel, err)
			}
			return nil
		case e.Kind == layerfs.KindFile || e.Kind == layerfs.KindWhiteout: // the latter: an xattr whiteout
			cloned, err := copyFile(root, e.Rel, out, perm.Perm(), reflink)
			if err != nil {
				return err
			}
			allReflinked = allReflinked && cloned
			return copyXattrs(root, e.Rel, out)
		}
		return nil // sockets, fifos, devices: not part of a tree
	})
	if err != nil {
		return false, err
	}
	// Directory modes last, so a read-only directory did not stop its copy.
	for _, d := range dirs {
		os.Chmod(d.path, d.perm.Perm())
	}
	return allReflinked, nil
}

func statPerm(d *layerfs.Dir) uint32 {
	if st, err := d.Lstat("."); err == nil {
		return st.Mode & 0o777
	}
	return 0o755
}

func copyFile(root *layerfs.Dir, rel, dst string, perm os.FileMode, reflink bool) (cloned bool, err error) {
	in, _, err := root.OpenFile(rel)
	if err != nil {
		return false, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm|0o200)
	if err != nil {
		return false, err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(dst, perm)
		}
	}()
	if reflink && unix.IoctlFileClone(int(out.Fd()), int(in.Fd())) == nil {
		return true, nil
	}
	_, err = io.Copy(out, in)
	return false, err
}

func copyXattrs(root *layerfs.Dir, rel, dst string) error {
	attrs, err := root.UserXattrs(rel)
	if err != nil {
		return nil
	}
	for name, val := range attrs {
		if err := unix.Lsetxattr(dst, name, val, 0); err != nil && !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.ENOTSUP) {
			return fmt.Errorf("copy attribute %s of %s: %w", name, rel, err)
		}
	}
	return nil
}

// reflinkWorks reports whether dir's filesystem can share blocks (FICLONE).
func reflinkWorks(dir string) bool {
	a, err := os.CreateTemp(dir, ".reflink-probe-")
	if err != nil {
		return false
	}
	defer os.Remove(a.Name())
	defer a.Close()
	a.WriteString("x")
	b, err := os.CreateTemp(dir, ".reflink-probe-")
	if err != nil {
		return false
	}
	defer os.Remove(b.Name())
	defer b.Close()
	return unix.IoctlFileClone(int(b.Fd()), int(a.Fd())) == nil
}
