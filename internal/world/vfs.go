package world

import (
	"errors"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

type kind uint8

const (
	kindDir kind = iota
	kindFile
	kindSymlink
)

// inode is one file, directory or symlink. A hard-link group is several directory entries
// pointing at one inode, which is how the group survives a save (format.go numbers inodes).
type inode struct {
	kind     kind
	mode     fs.FileMode // permission bits and sticky/setuid/setgid only
	mtime    time.Time
	data     []byte
	target   string
	children map[string]*inode
	nlink    int
}

// FS is a world's filesystem. It has no host path behind it: every name resolves in this tree,
// including absolute symlink targets, so no name a script makes can lead out of it.
type FS struct {
	root    *inode
	size    int64 // bytes of file data, each inode counted once
	maxSize int64 // 0: unlimited
	now     func() time.Time
	// overLimit is set when a write would pass maxSize; the write fails and the exec ends.
	overLimit error
	// mu serialises the tree: a pipeline's commands and background jobs run as goroutines.
	mu sync.Mutex
}

const maxSymlinkHops = 40

func newFS(now func() time.Time) *FS {
	if now == nil {
		now = time.Now
	}
	t := now()
	f := &FS{now: now}
	f.root = &inode{kind: kindDir, mode: 0o755, mtime: t, children: map[string]*inode{}, nlink: 1}
	f.root.children["work"] = &inode{kind: kindDir, mode: 0o755, mtime: t, children: map[string]*inode{}, nlink: 1}
	f.root.children["tmp"] = &inode{kind: kindDir, mode: 0o1777, mtime: t, children: map[string]*inode{}, nlink: 1}
	return f
}

func perr(op, p string, err error) error { return &fs.PathError{Op: op, Path: p, Err: err} }

// writable says whether entries may be made or removed in the directory at dir (a resolved path).
func writable(dir string) bool {
	return dir == "/work" || strings.HasPrefix(dir, "/work/") || dir == "/tmp" || strings.HasPrefix(dir, "/tmp/")
}

func split(p string) []string {
	p = path.Clean("/" + p)
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

// lookup resolves p. It returns the directory the last component is in (its resolved path too),
// the last name, and the node (nil when that name does not exist but its directory does).
// follow says whether a symlink as the last component is followed.
func (f *FS) lookup(p string, follow bool) (dir *inode, dirPath, name string, n *inode, err error) {
	return f.lookupHops(p, follow, 0)
}

func (f *FS) lookupHops(p string, follow bool, hops int) (*inode, string, string, *inode, error) {
	comps := split(p)
	if len(comps) == 0 {
		return nil, "/", "", f.root, nil
	}
	cur, curPath := f.root, "/"
	for i, c := range comps {
		if cur.kind != kindDir {
			return nil, "", "", nil, perr("lookup", p, syscall.ENOTDIR)
		}
		child := cur.children[c]
		last := i == len(comps)-1
		if child == nil {
			if last {
				return cur, curPath, c, nil, nil
			}
			return nil, "", "", nil, perr("lookup", p, syscall.ENOENT)
		}
		if child.kind == kindSymlink && (!last || follow) {
			if hops++; hops > maxSymlinkHops {
				return nil, "", "", nil, perr("lookup", p, syscall.ELOOP)
			}
			t := child.target
			if !strings.HasPrefix(t, "/") {
				t = path.Join(curPath, t)
			}
			rest := path.Join(append([]string{t}, comps[i+1:]...)...)
			return f.lookupHops(rest, follow, hops)
		}
		if last {
			return cur, curPath, c, child, nil
		}
		cur, curPath = child, path.Join(curPath, c)
	}
	panic("unreachable")
}

func (f *FS) get(p string, follow bool, op string) (*inode, error) {
	_, _, _, n, err := f.lookup(p, follow)
	if err != nil {
		return nil, perr(op, p, errors.Unwrap(err))
	}
	if n == nil {
		return nil, perr(op, p, syscall.ENOENT)
	}
	return n, nil
}

// parentFor resolves the directory an entry named by p is to be made in, refusing where writes are.
func (f *FS) parentFor(p, op string) (*inode, string, *inode, error) {
	dir, dirPath, name, n, err := f.lookup(p, false)
	if err != nil {
		return nil, "", nil, perr(op, p, errors.Unwrap(err))
	}
	if dir == nil { // p is "/"
		return nil, "", nil, perr(op, p, syscall.EROFS)
	}
	if !writable(dirPath) && !(dirPath == "/" && (name == "work" || name == "tmp") && n != nil) {
		return nil, "", nil, perr(op, p, syscall.EROFS)
	}
	return dir, name, n, nil
}

func (f *FS) setData(n *inode, b []byte) error {
	delta := int64(len(b) - len(n.data))
	if f.maxSize > 0 && delta > 0 && f.size+delta > f.maxSize {
		f.overLimit = perr("write", "", syscall.EFBIG)
		return limitError("world size", f.maxSize)
	}
	f.size += delta
	n.data = b
	n.mtime = f.now()
	return nil
}

func (f *FS) unlinkNode(n *inode) {
	n.nlink--
	if n.nlink > 0 {
		return
	}
	switch n.kind {
	case kindFile:
		f.size -= int64(len(n.data))
	case kindDir:
		for _, c := range n.children {
			f.unlinkNode(c)
		}
	}
}

// Stat describes p, following a final symlink when follow is true.
func (f *FS) Stat(p string, follow bool) (fs.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.get(p, follow, "stat")
	if err != nil {
		return nil, err
	}
	return fileInfo{name: path.Base(path.Clean("/" + p)), n: n}, nil
}

// ReadDir lists a directory, sorted by name.
func (f *FS) ReadDir(p string) ([]fs.DirEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.get(p, true, "readdir")
	if err != nil {
		return nil, err
	}
	if n.kind != kindDir {
		return nil, perr("readdir", p, syscall.ENOTDIR)
	}
	out := make([]fs.DirEntry, 0, len(n.children))
	for name, c := range n.children {
		out = append(out, fileInfo{name: name, n: c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// ReadFile returns a copy of a file's bytes.
func (f *FS) ReadFile(p string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.get(p, true, "open")
	if err != nil {
		return nil, err
	}
	if n.kind == kindDir {
		return nil, perr("read", p, syscall.EISDIR)
	}
	return append([]byte(nil), n.data...), nil
}

// WriteFile creates or truncates p and writes b; a new file gets perm.
func (f *FS) WriteFile(p string, b []byte, perm fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.create(p, perm, true)
	if err != nil {
		return err
	}
	return f.setData(n, append([]byte(nil), b...))
}

// create returns the file at p, made if missing, truncated when trunc.
func (f *FS) create(p string, perm fs.FileMode, trunc bool) (*inode, error) {
	_, dirPath, _, n, err := f.lookup(p, true)
	if err != nil {
		return nil, perr("open", p, errors.Unwrap(err))
	}
	if n != nil {
		if n.kind == kindDir {
			return nil, perr("open", p, syscall.EISDIR)
		}
		if !writable(dirPath) {
			return nil, perr("open", p, syscall.EROFS)
		}
		if trunc {
			if err := f.setData(n, nil); err != nil {
				return nil, err
			}
		}
		return n, nil
	}
	// Follow a dangling final symlink to where it points, as open(O_CREAT) does.
	dir, dirPath, name, _, err := f.lookup(p, true)
	if err != nil || dir == nil {
		return nil, perr("open", p, syscall.ENOENT)
	}
	if !writable(dirPath) {
		return nil, perr("open", p, syscall.EROFS)
	}
	n = &inode{kind: kindFile, mode: perm.Perm(), mtime: f.now(), nlink: 1}
	dir.children[name] = n
	dir.mtime = n.mtime
	return n, nil
}

// Mkdir makes one directory.
func (f *FS) Mkdir(p string, perm fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mkdir(p, perm)
}

func (f *FS) mkdir(p string, perm fs.FileMode) error {
	dir, name, n, err := f.parentFor(p, "mkdir")
	if err != nil {
		return err
	}
	if n != nil {
		return perr("mkdir", p, syscall.EEXIST)
	}
	t := f.now()
	dir.children[name] = &inode{kind: kindDir, mode: perm & (fs.ModePerm | fs.ModeSticky), mtime: t, children: map[string]*inode{}, nlink: 1}
	dir.mtime = t
	return nil
}

// MkdirAll makes p and its missing parents.
func (f *FS) MkdirAll(p string, perm fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	comps := split(p)
	cur := ""
	for _, c := range comps {
		cur += "/" + c
		n, err := f.get(cur, true, "mkdir")
		if err == nil {
			if n.kind != kindDir {
				return perr("mkdir", cur, syscall.ENOTDIR)
			}
			continue
		}
		if err := f.mkdir(cur, perm); err != nil {
			return err
		}
	}
	return nil
}

// Remove removes a file, a symlink or an empty directory; RemoveAll also a full one.
func (f *FS) Remove(p string, all bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	dir, name, n, err := f.parentFor(p, "remove")
	if err != nil {
		return err
	}
	if n == nil {
		return perr("remove", p, syscall.ENOENT)
	}
	if dir == f.root {
		return perr("remove", p, syscall.EBUSY)
	}
	if n.kind == kindDir && len(n.children) > 0 && !all {
		return perr("remove", p, syscall.ENOTEMPTY)
	}
	delete(dir.children, name)
	dir.mtime = f.now()
	f.unlinkNode(n)
	return nil
}

// Rename moves oldp to newp, replacing a file (or an empty directory) there.
func (f *FS) Rename(oldp, newp string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	odir, oname, n, err := f.parentFor(oldp, "rename")
	if err != nil {
		return err
	}
	if n == nil {
		return perr("rename", oldp, syscall.ENOENT)
	}
	ndir, nname, existing, err := f.parentFor(newp, "rename")
	if err != nil {
		return err
	}
	if existing == n {
		return nil
	}
	if n.kind == kindDir && f.contains(n, ndir) {
		return perr("rename", newp, syscall.EINVAL)
	}
	if existing != nil {
		if existing.kind == kindDir && (n.kind != kindDir || len(existing.children) > 0) {
			return perr("rename", newp, syscall.EISDIR)
		}
		if existing.kind != kindDir && n.kind == kindDir {
			return perr("rename", newp, syscall.ENOTDIR)
		}
		f.unlinkNode(existing)
	}
	delete(odir.children, oname)
	ndir.children[nname] = n
	t := f.now()
	odir.mtime, ndir.mtime = t, t
	return nil
}

func (f *FS) contains(dir, n *inode) bool {
	if dir == n {
		return true
	}
	for _, c := range dir.children {
		if c.kind == kindDir && f.contains(c, n) {
			return true
		}
	}
	return false
}

// Symlink makes newp a symlink holding target, which is never resolved outside this tree.
func (f *FS) Symlink(target, newp string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	dir, name, n, err := f.parentFor(newp, "symlink")
	if err != nil {
		return err
	}
	if n != nil {
		return perr("symlink", newp, syscall.EEXIST)
	}
	t := f.now()
	dir.children[name] = &inode{kind: kindSymlink, mode: 0o777, mtime: t, target: target, nlink: 1}
	dir.mtime = t
	return nil
}

// Link makes newp another name of the file at oldp.
func (f *FS) Link(oldp, newp string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.get(oldp, false, "link")
	if err != nil {
		return err
	}
	if n.kind == kindDir {
		return perr("link", oldp, syscall.EPERM)
	}
	dir, name, existing, err := f.parentFor(newp, "link")
	if err != nil {
		return err
	}
	if existing != nil {
		return perr("link", newp, syscall.EEXIST)
	}
	n.nlink++
	dir.children[name] = n
	dir.mtime = f.now()
	return nil
}

// Readlink returns a symlink's target.
func (f *FS) Readlink(p string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.get(p, false, "readlink")
	if err != nil {
		return "", err
	}
	if n.kind != kindSymlink {
		return "", perr("readlink", p, syscall.EINVAL)
	}
	return n.target, nil
}

// Chmod sets the permission bits of what p resolves to.
func (f *FS) Chmod(p string, mode fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, dirPath, name, n, err := f.lookup(p, true)
	if err != nil || n == nil {
		return perr("chmod", p, syscall.ENOENT)
	}
	if !writable(dirPath) && !(dirPath == "/" && (name == "work" || name == "tmp")) {
		return perr("chmod", p, syscall.EROFS)
	}
	n.mode = mode & (fs.ModePerm | fs.ModeSticky | fs.ModeSetuid | fs.ModeSetgid)
	return nil
}

// Chtimes sets the modification time of what p resolves to.
func (f *FS) Chtimes(p string, t time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, dirPath, name, n, err := f.lookup(p, true)
	if err != nil || n == nil {
		return perr("utimes", p, syscall.ENOENT)
	}
	if !writable(dirPath) && !(dirPath == "/" && (name == "work" || name == "tmp")) {
		return perr("utimes", p, syscall.EROFS)
	}
	n.mtime = t
	return nil
}

// Size is the bytes of file data in the world, each hard-link group counted once.
func (f *FS) Size() int64 { return f.size }

// Count returns the files, directories (below /work) and symlinks that /work holds.
func (f *FS) Count() (files, dirs, links int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[*inode]bool{}
	var walk func(n *inode)
	walk = func(n *inode) {
		for _, c := range n.children {
			if seen[c] {
				continue
			}
			seen[c] = true
			switch c.kind {
			case kindDir:
				dirs++
				walk(c)
			case kindFile:
				files++
			case kindSymlink:
				links++
			}
		}
	}
	walk(f.root.children["work"])
	return files, dirs, links
}
