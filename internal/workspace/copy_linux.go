package workspace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// copyTree copies src to dst (which must not exist): directories, regular
// files (by reflink when reflink is set and the filesystem shares blocks,
// else by copy), symlinks as they are, overlayfs whiteouts (character
// devices 0/0, which the kernel lets anyone make) and user.* extended
// attributes (overlayfs's opaque-directory marks). It reports whether every
// file was reflinked.
func copyTree(src, dst string, reflink bool) (allReflinked bool, err error) {
	allReflinked = reflink
	err = filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(out, fi.Mode().Perm()|0o700); err != nil {
				return err
			}
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, out)
		case fi.Mode()&os.ModeCharDevice != 0:
			st, ok := fi.Sys().(*syscall.Stat_t)
			if !ok || st.Rdev != 0 {
				return fmt.Errorf("copy %s: unexpected device file", rel)
			}
			if err := unix.Mknod(out, unix.S_IFCHR|uint32(fi.Mode().Perm()), 0); err != nil {
				return fmt.Errorf("copy whiteout %s: %w", rel, err)
			}
		case fi.Mode().IsRegular():
			cloned, err := copyFile(p, out, fi.Mode().Perm(), reflink)
			if err != nil {
				return err
			}
			allReflinked = allReflinked && cloned
		default:
			return nil // sockets, fifos: not part of a tree
		}
		return copyXattrs(p, out)
	})
	if err != nil {
		return false, err
	}
	// Directory modes last, so a read-only directory did not stop its copy.
	return allReflinked, filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			rel, _ := filepath.Rel(src, p)
			if fi, err := d.Info(); err == nil {
				os.Chmod(filepath.Join(dst, rel), fi.Mode().Perm())
			}
		}
		return nil
	})
}

func copyFile(src, dst string, perm os.FileMode, reflink bool) (cloned bool, err error) {
	in, err := os.Open(src)
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

func copyXattrs(src, dst string) error {
	size, err := unix.Llistxattr(src, nil)
	if err != nil || size == 0 {
		return nil
	}
	buf := make([]byte, size)
	if size, err = unix.Llistxattr(src, buf); err != nil {
		return nil
	}
	for _, name := range splitNul(buf[:size]) {
		if len(name) < 5 || name[:5] != "user." {
			continue
		}
		vs, err := unix.Lgetxattr(src, name, nil)
		if err != nil {
			continue
		}
		val := make([]byte, vs)
		if vs, err = unix.Lgetxattr(src, name, val); err != nil {
			continue
		}
		if err := unix.Lsetxattr(dst, name, val[:vs], 0); err != nil && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("copy attribute %s of %s: %w", name, src, err)
		}
	}
	return nil
}

func splitNul(b []byte) []string {
	var out []string
	start := 0
	for i, c := range b {
		if c == 0 {
			if i > start {
				out = append(out, string(b[start:i]))
			}
			start = i + 1
		}
	}
	return out
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
