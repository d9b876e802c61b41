package world

import (
	"io"
	"io/fs"
	"os"
	"syscall"
)

// handle is an open file of the world, what the interpreter's redirections read and write.
type handle struct {
	f      *FS
	n      *inode
	off    int
	read   bool
	write  bool
	append bool
}

// Open opens p with os.OpenFile's flags, inside the world only.
func (f *FS) Open(p string, flag int, perm fs.FileMode) (io.ReadWriteCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	acc := flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	h := &handle{f: f, read: acc != os.O_WRONLY, write: acc != os.O_RDONLY, append: flag&os.O_APPEND != 0}
	if flag&os.O_CREATE != 0 {
		if flag&os.O_EXCL != 0 {
			if _, _, _, n, err := f.lookup(p, false); err == nil && n != nil {
				return nil, perr("open", p, syscall.EEXIST)
			}
		}
		n, err := f.create(p, perm, flag&os.O_TRUNC != 0)
		if err != nil {
			return nil, err
		}
		h.n = n
		return h, nil
	}
	_, dirPath, _, n, err := f.lookup(p, true)
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, perr("open", p, syscall.ENOENT)
	}
	if n.kind == kindDir && h.write {
		return nil, perr("open", p, syscall.EISDIR)
	}
	if h.write && !writable(dirPath) {
		return nil, perr("open", p, syscall.EROFS)
	}
	if flag&os.O_TRUNC != 0 && h.write {
		if err := f.setData(n, nil); err != nil {
			return nil, err
		}
	}
	h.n = n
	return h, nil
}

func (h *handle) Read(b []byte) (int, error) {
	if !h.read {
		return 0, syscall.EBADF
	}
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	if h.n.kind == kindDir {
		return 0, syscall.EISDIR
	}
	if h.off >= len(h.n.data) {
		return 0, io.EOF
	}
	c := copy(b, h.n.data[h.off:])
	h.off += c
	return c, nil
}

func (h *handle) Write(b []byte) (int, error) {
	if !h.write {
		return 0, syscall.EBADF
	}
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	if h.append {
		h.off = len(h.n.data)
	}
	end := h.off + len(b)
	data := h.n.data
	switch {
	case end > cap(data):
		// Grow by doubling, so a file written in many small pieces costs linear time.
		grown := make([]byte, end, max(end, 2*cap(data)))
		copy(grown, data)
		data = grown
	case end > len(data):
		data = data[:end]
	}
	copy(data[h.off:], b)
	if err := h.f.setData(h.n, data); err != nil {
		return 0, err
	}
	h.off = end
	return len(b), nil
}

func (h *handle) Close() error { return nil }
