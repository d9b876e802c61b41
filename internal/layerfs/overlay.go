//go:build linux || darwin

package layerfs

import (
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// kindOf classifies an entry named name in d. Whiteouts come in two forms:
// a character device 0/0 (what the kernel makes), or an empty regular file
// carrying an overlay.whiteout attribute (kernel 6.7+, for layers made
// without mknod).
func (d *Dir) kindOf(name string, st *unix.Stat_t) Kind {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return KindDir
	case unix.S_IFLNK:
		return KindSymlink
	case unix.S_IFCHR:
		if st.Rdev == 0 {
			return KindWhiteout
		}
	case unix.S_IFREG:
		if st.Size == 0 {
			for _, x := range whiteoutXattrs {
				if d.FileXattr(name, x) != nil {
					return KindWhiteout
				}
			}
		}
		return KindFile
	}
	return KindOther
}

// Opaque reports whether the directory hides what lower layers hold at its
// path. Only "y" means opaque: "x" (kernel 6.7+) marks a folder that holds
// xattr whiteouts, and is not opaque.
func (d *Dir) Opaque() bool {
	for _, x := range opaqueXattrs {
		if v := d.Getxattr(x); len(v) > 0 && v[0] == 'y' {
			return true
		}
	}
	return false
}

// Walk visits every name below d, parents before children, in name order,
// through descriptors only. fn returning SkipDir for a directory skips it.
func (d *Dir) Walk(lim WalkLimits, fn func(WalkEntry) error) error {
	if lim.Depth <= 0 {
		lim.Depth = 256
	}
	if lim.Entries <= 0 {
		lim.Entries = 1_000_000
	}
	seen := 0
	return d.walk("", 0, lim, &seen, fn)
}

func (d *Dir) walk(prefix string, depth int, lim WalkLimits, seen *int, fn func(WalkEntry) error) error {
	if depth >= lim.Depth {
		return &LimitError{Path: prefix, What: "depth", Limit: int64(lim.Depth)}
	}
	entries, err := d.ReadDir(lim.Entries - *seen + 1)
	if err != nil {
		return err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	for _, e := range entries {
		if *seen++; *seen > lim.Entries {
			return &LimitError{Path: prefix + e.Name, What: "files and folders", Limit: int64(lim.Entries)}
		}
		we := WalkEntry{Rel: prefix + e.Name, Kind: d.kindOf(e.Name, &e.Stat), Stat: e.Stat}
		var sub *Dir
		if we.Kind == KindDir {
			if sub, err = d.OpenDir(e.Name); err != nil {
				if errors.Is(err, os.ErrNotExist) {
					continue // removed meanwhile
				}
				return err
			}
			we.Opaque = sub.Opaque()
		}
		err := fn(we)
		if sub != nil {
			if err == nil {
				err = sub.walk(we.Rel+"/", depth+1, lim, seen, fn)
			} else if err == SkipDir {
				err = nil
			}
			sub.Close()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Layers is an overlay stack read as overlayfs would: Layers[0] is the
// upper (writable) layer, then the lower ones, topmost first. A plain tree
// is a stack of one.
type Layers struct {
	dirs []*Dir
}

// OpenLayers opens the layer roots (trusted paths made by forkbomb).
func OpenLayers(paths []string) (*Layers, error) {
	l := &Layers{}
	for _, p := range paths {
		d, err := Open(p)
		if err != nil {
			l.Close()
			return nil, err
		}
		l.dirs = append(l.dirs, d)
	}
	if len(l.dirs) == 0 {
		return nil, errors.New("no layers")
	}
	return l, nil
}

// Close closes every layer.
func (l *Layers) Close() {
	for _, d := range l.dirs {
		d.Close()
	}
}

// Lookup finds rel in the merged view: the index of the layer holding it
// and its status. A symlink on the way, or at rel, is ErrSymlink (the
// caller decides what to make of a symlink at rel: the status is returned
// with the error).
func (l *Layers) Lookup(rel string) (int, *unix.Stat_t, error) {
	rel = clean(rel)
	var parts []string
	if rel != "." {
		parts = strings.Split(rel, "/")
	}
	for i, d := range l.dirs {
		cur, present, opaque := ".", true, false
		var st *unix.Stat_t
		for j, c := range parts {
			cur = path.Join(cur, c)
			var err error
			if st, err = d.Lstat(cur); err != nil {
				if errors.Is(err, os.ErrNotExist) {
					present = false
					break
				}
				return 0, nil, err
			}
			last := j == len(parts)-1
			switch d.kindOf(cur, st) {
			case KindWhiteout:
				return 0, nil, &os.PathError{Op: "lookup", Path: rel, Err: os.ErrNotExist}
			case KindSymlink:
				return i, st, &KindError{Path: cur, Kind: "symlink", Err: ErrSymlink}
			case KindDir:
				if !last {
					if sub, err := d.OpenDir(cur); err == nil {
						opaque = opaque || sub.Opaque()
						sub.Close()
					}
				}
			default:
				if !last {
					return 0, nil, &os.PathError{Op: "lookup", Path: rel, Err: os.ErrNotExist}
				}
			}
		}
		if present {
			if st == nil { // the root
				var err error
				if st, err = d.Lstat("."); err != nil {
					return 0, nil, err
				}
			}
			return i, st, nil
		}
		if opaque {
			break
		}
	}
	return 0, nil, &os.PathError{Op: "lookup", Path: rel, Err: os.ErrNotExist}
}

// ReadFile reads a regular file of the merged view, of at most max bytes.
func (l *Layers) ReadFile(rel string, max int64) ([]byte, os.FileMode, error) {
	i, st, err := l.Lookup(rel)
	if err != nil {
		return nil, 0, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return nil, 0, &KindError{Path: rel, Kind: "directory", Err: ErrNotRegular}
	}
	return l.dirs[i].ReadFile(rel, max)
}

// List returns a directory's merged entries, folders ending in "/", at
// most max of them from each layer.
func (l *Layers) List(rel string, max int) ([]string, error) {
	_, st, err := l.Lookup(rel)
	if err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, fmt.Errorf("%s is not a directory", rel)
	}
	seen, gone := map[string]bool{}, map[string]bool{}
	var out []string
	for _, layer := range l.dirs {
		d, err := layer.OpenDir(rel)
		if err != nil {
			// Absent here, or not a folder here (a file an upper folder
			// hides), or a symlink: nothing of it is listed.
			continue
		}
		entries, err := d.ReadDir(max)
		opaque := d.Opaque()
		if err == nil {
			for _, e := range entries {
				if seen[e.Name] || gone[e.Name] {
					continue
				}
				switch d.kindOf(e.Name, &e.Stat) {
				case KindWhiteout:
					gone[e.Name] = true
					continue
				case KindDir:
					out = append(out, e.Name+"/")
				default:
					out = append(out, e.Name)
				}
				seen[e.Name] = true
			}
		}
		d.Close()
		if err != nil {
			return nil, err
		}
		if opaque {
			break
		}
	}
	sort.Strings(out)
	return out, nil
}

// WriteFile writes rel in the upper layer, making its folders there as
// overlayfs would (a folder replacing a whiteout is opaque). Nothing on
// the way may be a symlink, and the file is replaced by rename, never
// written through: see Dir.WriteFile.
func (l *Layers) WriteFile(rel string, data []byte, perm os.FileMode) error {
	rel = clean(rel)
	if rel == "." {
		return errors.New("cannot write the root")
	}
	if _, st, err := l.Lookup(rel); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return fmt.Errorf("%s is a directory", rel)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	dir, err := l.dirs[0].OpenDir(".")
	if err != nil {
		return err
	}
	defer func() { dir.Close() }()
	for _, c := range strings.Split(path.Dir(rel), "/") {
		if c == "." {
			continue
		}
		st, err := dir.Lstat(c)
		switch {
		case err != nil && errors.Is(err, os.ErrNotExist):
			if err := dir.Mkdir(c, 0o755); err != nil {
				return err
			}
		case err != nil:
			return err
		case dir.kindOf(c, st) == KindWhiteout:
			if err := dir.Remove(c); err != nil {
				return err
			}
			if err := dir.Mkdir(c, 0o755); err != nil {
				return err
			}
			sub, err := dir.OpenDir(c)
			if err != nil {
				return err
			}
			err = sub.Setxattr(OpaqueXattr, []byte("y"))
			sub.Close()
			if err != nil {
				return fmt.Errorf("mark %s opaque: %w", c, err)
			}
		case st.Mode&unix.S_IFMT != unix.S_IFDIR:
			return fmt.Errorf("%s is not a directory", c)
		}
		sub, err := dir.OpenDir(c)
		if err != nil {
			return err
		}
		dir.Close()
		dir = sub
	}
	base := path.Base(rel)
	if st, err := dir.Lstat(base); err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink > 1 {
		return &KindError{Path: rel, Kind: "file with other hard links", Err: ErrNotRegular}
	}
	return dir.WriteFile(base, data, perm)
}
