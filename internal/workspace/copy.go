//go:build linux || darwin

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

// cloner makes dst (which does not exist) a copy of the open regular file
// in that shares its blocks — FICLONE on Linux, clonefile on macOS — or
// fails leaving nothing at dst, and copyTree copies the bytes instead.
type cloner func(in *os.File, dst string) error

// copyTree copies src to dst (which must not exist): directories, regular
// files (each through clone when it is set and the filesystem shares
// blocks, else by copy), symlinks as they are, overlayfs whiteouts
// (copyWhiteout) and user.* extended attributes (overlayfs's
// opaque-directory marks). It reports whether every file was cloned. src
// is a fork's tree or layer: it is read through layerfs, so no link is
// followed and no FIFO or device is opened.
func copyTree(src, dst string, clone cloner) (allCloned bool, err error) {
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
	allCloned = clone != nil
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
			if err := copyWhiteout(out, perm.Perm()); err != nil {
				return fmt.Errorf("copy whiteout %s: %w", e.Rel, err)
			}
			return nil
		case e.Kind == layerfs.KindFile || e.Kind == layerfs.KindWhiteout: // the latter: an xattr whiteout
			cloned, err := copyFile(root, e.Rel, out, perm.Perm(), clone)
			if err != nil {
				return err
			}
			allCloned = allCloned && cloned
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
	return allCloned, nil
}

func statPerm(d *layerfs.Dir) uint32 {
	if st, err := d.Lstat("."); err == nil {
		return uint32(st.Mode & 0o777)
	}
	return 0o755
}

// copyFile copies the regular file rel of root to dst: a clone where
// clone can make one, else the bytes, read from the file layerfs opened
// (never by a name the fork could swap).
func copyFile(root *layerfs.Dir, rel, dst string, perm os.FileMode, clone cloner) (cloned bool, err error) {
	in, _, err := root.OpenFile(rel)
	if err != nil {
		return false, err
	}
	defer in.Close()
	if clone != nil && clone(in, dst) == nil {
		return true, os.Chmod(dst, perm)
	}
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

// cloneWorks reports whether clone can share blocks in dir's filesystem.
func cloneWorks(dir string, clone cloner) bool {
	a, err := os.CreateTemp(dir, ".reflink-probe-")
	if err != nil {
		return false
	}
	defer os.Remove(a.Name())
	defer a.Close()
	a.WriteString("x")
	b := a.Name() + "-clone"
	defer os.Remove(b)
	return clone(a, b) == nil
}
