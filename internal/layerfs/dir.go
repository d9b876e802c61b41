//go:build linux || darwin

package layerfs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// Dir is an open directory that names are resolved beneath.
type Dir struct {
	fd   int
	name string // for messages only; never opened again
	// stepwise resolves names one at a time (walk.go), as on macOS, which
	// has no openat2. On Linux only the tests set it, to attack that
	// resolution with every trap on this kernel too.
	stepwise bool
}

// Open opens a directory the caller trusts (a layer's root, made by
// forkbomb). Everything below it is resolved through the descriptor.
func Open(dir string) (*Dir, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return &Dir{fd: fd, name: dir}, nil
}

// Close releases the descriptor.
func (d *Dir) Close() error { return unix.Close(d.fd) }

// Name is the path the directory was opened as (for messages).
func (d *Dir) Name() string { return d.name }

func clean(rel string) string {
	rel = path.Clean("/" + rel)[1:]
	if rel == "" {
		return "."
	}
	return rel
}

// OpenDir opens a directory beneath d.
func (d *Dir) OpenDir(rel string) (*Dir, error) {
	fd, err := d.openat(rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) && errors.Is(pe.Err, unix.ENOTDIR) {
			return nil, &KindError{Path: rel, Kind: "file", Err: ErrNotRegular}
		}
		return nil, err
	}
	return &Dir{fd: fd, name: path.Join(d.name, clean(rel)), stepwise: d.stepwise}, nil
}

// ReadFile reads a regular file of at most max bytes. Anything else — a
// symlink, a FIFO (opened non-blocking, so it cannot hang the caller), a
// socket, a device, a directory — is refused before a byte is read; a
// larger file is refused by its size, and one that grows while it is read
// is refused at max+1 bytes.
func (d *Dir) ReadFile(rel string, max int64) ([]byte, os.FileMode, error) {
	f, st, err := d.OpenFile(rel)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	if st.Size > max {
		return nil, 0, &LimitError{Path: rel, What: "file", Size: st.Size, Limit: max}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, 0, fmt.Errorf("read %q: %w", rel, err)
	}
	if int64(len(data)) > max {
		return nil, 0, &LimitError{Path: rel, What: "file", Size: int64(len(data)), Limit: max}
	}
	return data, os.FileMode(st.Mode & 0o7777), nil
}

// OpenFile opens a regular file for reading: non-blocking, without
// following a link, checked to be regular before it is returned.
func (d *Dir) OpenFile(rel string) (*os.File, *unix.Stat_t, error) {
	fd, err := d.openat(rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, nil, err
	}
	f := os.NewFile(uintptr(fd), rel)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, nil, &os.PathError{Op: "stat", Path: rel, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return nil, nil, &KindError{Path: rel, Kind: KindOf(&st), Err: ErrNotRegular}
	}
	return f, &st, nil
}

// UserXattrs returns the user.* extended attributes of the regular file
// or folder rel, read through its descriptor.
func (d *Dir) UserXattrs(rel string) (map[string][]byte, error) {
	fd, err := d.openat(rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFREG && t != unix.S_IFDIR {
		return nil, &KindError{Path: rel, Kind: KindOf(&st), Err: ErrNotRegular}
	}
	buf := make([]byte, 64<<10)
	n, err := unix.Flistxattr(fd, buf)
	if err != nil || n == 0 {
		return nil, nil
	}
	out := map[string][]byte{}
	for _, name := range strings.Split(string(buf[:n]), "\x00") {
		if strings.HasPrefix(name, "user.") {
			v := make([]byte, 64<<10)
			if k, err := unix.Fgetxattr(fd, name, v); err == nil {
				out[name] = v[:k]
			}
		}
	}
	return out, nil
}

// Readlink returns a symlink's target (at most 4 KiB), without following it.
func (d *Dir) Readlink(rel string) (string, error) {
	parent, base, err := d.parent(rel)
	if err != nil {
		return "", err
	}
	defer parent.Close()
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(parent.fd, base, buf)
	if err != nil {
		return "", &os.PathError{Op: "readlink", Path: rel, Err: err}
	}
	if n >= len(buf) {
		return "", &LimitError{Path: rel, What: "file", Size: int64(n), Limit: int64(len(buf) - 1)}
	}
	return string(buf[:n]), nil
}

// parent opens rel's folder and returns it with rel's last name.
func (d *Dir) parent(rel string) (*Dir, string, error) {
	rel = clean(rel)
	if rel == "." {
		return nil, "", errors.New("the root has no parent")
	}
	p, err := d.OpenDir(path.Dir(rel))
	if err != nil {
		return nil, "", err
	}
	return p, path.Base(rel), nil
}

// ReadDir lists a directory's entries, at most max of them.
func (d *Dir) ReadDir(max int) ([]Entry, error) {
	// A fresh descriptor: reading a directory moves its offset.
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: d.name, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.name)
	defer f.Close()
	var out []Entry
	for {
		// Names only: os's DirEntry.Info would lstat by path.
		names, err := f.Readdirnames(1024)
		for _, n := range names {
			if len(out) >= max {
				return nil, &LimitError{Path: d.name, What: "entries in one folder", Limit: int64(max)}
			}
			e := Entry{Name: n}
			if err := unix.Fstatat(d.fd, n, &e.Stat, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				if err == unix.ENOENT {
					continue // removed meanwhile
				}
				return nil, &os.PathError{Op: "stat", Path: path.Join(d.name, n), Err: err}
			}
			out = append(out, e)
		}
		if err == io.EOF || (err == nil && len(names) == 0) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", d.name, err)
		}
	}
}

// Getxattr returns the value of one extended attribute of the directory
// itself (nil if it has none).
func (d *Dir) Getxattr(name string) []byte {
	return fgetxattr(d.fd, name)
}

// FileXattr returns an attribute of the regular file rel (opened
// non-blocking, checked), or nil.
func (d *Dir) FileXattr(rel, name string) []byte {
	fd, err := d.openat(rel, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	return fgetxattr(fd, name)
}

func fgetxattr(fd int, name string) []byte {
	buf := make([]byte, 256)
	n, err := unix.Fgetxattr(fd, name, buf)
	if err != nil {
		return nil
	}
	return buf[:n]
}

// Setxattr sets an attribute on the directory itself.
func (d *Dir) Setxattr(name string, value []byte) error {
	if err := unix.Fsetxattr(d.fd, name, value, 0); err != nil {
		return &os.PathError{Op: "setxattr " + name, Path: d.name, Err: err}
	}
	return nil
}

// Mkdir makes one folder named name (a single component) in d.
func (d *Dir) Mkdir(name string, perm os.FileMode) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Mkdirat(d.fd, name, uint32(perm.Perm())); err != nil {
		return &os.PathError{Op: "mkdir", Path: path.Join(d.name, name), Err: err}
	}
	return nil
}

// Remove removes the non-directory name (a single component) from d.
func (d *Dir) Remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Unlinkat(d.fd, name, 0); err != nil {
		return &os.PathError{Op: "remove", Path: path.Join(d.name, name), Err: err}
	}
	return nil
}

// WriteFile replaces (or creates) name, a single component in d, with a
// new file holding data: written to a fresh temporary name made with
// O_EXCL (so nothing already there — a link, a FIFO, a hard link to
// another file — is opened) and renamed over name, which replaces a
// symlink itself rather than writing through it.
func (d *Dir) WriteFile(name string, data []byte, perm os.FileMode) error {
	if err := checkName(name); err != nil {
		return err
	}
	var r [8]byte
	rand.Read(r[:])
	tmp := ".forkbomb-" + hex.EncodeToString(r[:])
	fd, err := unix.Openat(d.fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return &os.PathError{Op: "create", Path: path.Join(d.name, name), Err: err}
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm.Perm())
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(d.fd, tmp, d.fd, name)
	}
	if err != nil {
		unix.Unlinkat(d.fd, tmp, 0)
		return &os.PathError{Op: "write", Path: path.Join(d.name, name), Err: err}
	}
	return nil
}

func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("invalid file name %q", name)
	}
	return nil
}

// KindOf names a file type for messages.
func KindOf(st *unix.Stat_t) string {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "file"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFLNK:
		return "symlink"
	case unix.S_IFIFO:
		return "fifo"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	}
	return "special file"
}
