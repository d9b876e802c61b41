package world

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Export writes the world's /work into dir, which must be missing or empty. Every name is made
// through os.Root, so nothing lands outside dir whatever the world's names and links say; links
// are written as they are and never followed. Setuid and setgid bits are not written: a world
// could otherwise plant a setuid program for whoever exports it as root.
func (w *World) Export(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("export world: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("export world: %w", err)
	}
	defer root.Close()
	if ents, err := fs.ReadDir(root.FS(), "."); err != nil || len(ents) > 0 {
		return fmt.Errorf("export world: %s is not empty", dir)
	}
	type stamp struct {
		rel string
		t   time.Time
	}
	var stamps, links []stamp
	first := map[*inode]string{}
	var walk func(rel string, n *inode) error
	walk = func(rel string, n *inode) error {
		name := rel
		if name == "" {
			name = "."
		}
		switch n.kind {
		case kindDir:
			if rel != "" {
				if err := root.Mkdir(rel, 0o700); err != nil {
					return err
				}
			}
			names := make([]string, 0, len(n.children))
			for k := range n.children {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, k := range names {
				if err := walk(path.Join(rel, k), n.children[k]); err != nil {
					return err
				}
			}
		case kindFile:
			if prev, ok := first[n]; ok {
				return root.Link(prev, rel)
			}
			first[n] = rel
			f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
			if err != nil {
				return err
			}
			if _, err := f.Write(n.data); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
		case kindSymlink:
			if err := root.Symlink(n.target, rel); err != nil {
				return err
			}
			links = append(links, stamp{rel, n.mtime})
			return nil
		}
		if err := root.Chmod(name, n.mode&^(fs.ModeSetuid|fs.ModeSetgid)); err != nil {
			return err
		}
		stamps = append(stamps, stamp{name, n.mtime})
		return nil
	}
	if err := walk("", w.FS.root.children["work"]); err != nil {
		return fmt.Errorf("export world: %w", err)
	}
	// A symlink's own mtime, set through its directory's descriptor so the link is not followed.
	for _, l := range links {
		if err := lutimes(root, l.rel, l.t); err != nil {
			return fmt.Errorf("export world: %w", err)
		}
	}
	// Directories last and deepest first: making their entries changed their mtimes.
	for i := len(stamps) - 1; i >= 0; i-- {
		if err := root.Chtimes(stamps[i].rel, stamps[i].t, stamps[i].t); err != nil {
			return fmt.Errorf("export world: %w", err)
		}
	}
	return nil
}

// Import reads dir into a new world's /work. It never follows a link: symlinks are kept as
// links, refused when they point out of dir (a relative target climbing above it, or an absolute
// one outside /work, the world's name for dir). Devices, FIFOs and sockets are refused.
func Import(dir string, maxSize int64) (*World, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	defer root.Close()
	w := New()
	inodes := map[uint64]*inode{}
	var size int64
	var walk func(rel string, parent *inode, name string) error
	walk = func(rel string, parent *inode, name string) error {
		fi, err := root.Lstat(rel)
		if err != nil {
			return err
		}
		st, _ := fi.Sys().(*syscall.Stat_t)
		n := &inode{mode: fi.Mode() & (fs.ModePerm | fs.ModeSticky | fs.ModeSetuid | fs.ModeSetgid), mtime: fi.ModTime(), nlink: 1}
		switch {
		case fi.IsDir():
			n.kind, n.children = kindDir, map[string]*inode{}
			if parent != nil {
				parent.children[name] = n
			} else {
				w.FS.root.children["work"] = n
			}
			f, err := root.Open(rel)
			if err != nil {
				return err
			}
			ents, err := f.ReadDir(-1)
			f.Close()
			if err != nil {
				return err
			}
			for _, e := range ents {
				if err := walk(path.Join(rel, e.Name()), n, e.Name()); err != nil {
					return err
				}
			}
			return nil
		case fi.Mode()&fs.ModeSymlink != 0:
			t, err := root.Readlink(rel)
			if err != nil {
				return err
			}
			if escapes(rel, t) {
				return fmt.Errorf("%w: %s is a link out of the directory (%s)", ErrUnsafeImport, rel, t)
			}
			n.kind, n.target, n.mode = kindSymlink, t, 0o777
		case fi.Mode().IsRegular():
			if st != nil && st.Nlink > 1 {
				if prev := inodes[st.Ino]; prev != nil {
					prev.nlink++
					parent.children[name] = prev
					return nil
				}
			}
			f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
			if err != nil {
				return err
			}
			b, err := io.ReadAll(io.LimitReader(f, maxSize-size+1))
			f.Close()
			if err != nil {
				return err
			}
			size += int64(len(b))
			if maxSize > 0 && size > maxSize {
				return fmt.Errorf("%w: more than %d bytes", ErrLimit, maxSize)
			}
			n.kind, n.data = kindFile, b
			if st != nil && st.Nlink > 1 {
				inodes[st.Ino] = n
			}
		default:
			return fmt.Errorf("%w: %s is a %v", ErrUnsafeImport, rel, fi.Mode().Type())
		}
		parent.children[name] = n
		return nil
	}
	if maxSize <= 0 {
		maxSize = DefaultLimits.MaxSize
	}
	if err := walk(".", nil, ""); err != nil {
		return nil, fmt.Errorf("import %s: %w", dir, err)
	}
	w.FS.size = size
	return w, nil
}

// escapes says whether a link at rel (inside the imported directory) with target t leads out
// of it. Absolute targets are world paths: /work is the directory.
func escapes(rel, t string) bool {
	if strings.HasPrefix(t, "/") {
		c := path.Clean(t)
		return c != "/work" && !strings.HasPrefix(c, "/work/")
	}
	j := path.Join(path.Dir(rel), t)
	return j == ".." || strings.HasPrefix(j, "../")
}

func lutimes(root *os.Root, rel string, t time.Time) error {
	d, err := root.Open(path.Dir(rel))
	if err != nil {
		return err
	}
	defer d.Close()
	ts := []unix.Timespec{unix.NsecToTimespec(t.UnixNano()), unix.NsecToTimespec(t.UnixNano())}
	if err := unix.UtimesNanoAt(int(d.Fd()), path.Base(rel), ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "lutimes", Path: rel, Err: err}
	}
	return nil
}
