package world

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/forkbomb/forkbomb/internal/world/early"
)

// Load reads a world file.
func Load(p string, maxSize int64) (*World, error) {
	b, err := readFile(p)
	if err != nil {
		return nil, err
	}
	w, err := Decode(b, maxSize)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", p, err)
	}
	return w, nil
}

// readFile reads a world file's bytes, at most one more than the decoder accepts.
func readFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("open world: %w", err)
	}
	defer f.Close()
	// Sized from the file's length, so a world is read into one buffer, not grown through a
	// score of copies (each fresh megabyte costs hundreds of page faults).
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = min(max(fi.Size(), 0), maxFileBytes)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(f, maxFileBytes+1)); err != nil {
		return nil, fmt.Errorf("read world: %w", err)
	}
	return buf.Bytes(), nil
}

// Save writes the world to p atomically: a temporary file in the same directory, synced, then
// renamed over p, so a crash leaves the old world or the new one, never a torn one.
func (w *World) Save(p string) error {
	b, err := w.Encode()
	if err != nil {
		return err
	}
	return writeAtomic(p, b)
}

// writeAtomic is internal/atomicfile.Write, kept here: this package imports no package of the
// module whose code its fingerprint does not cover (TestFingerprintCoversTheWorker), and the
// fingerprint is the worker's, which never saves.
func writeAtomic(p string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp-*")
	if err != nil {
		return fmt.Errorf("save world: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("save world: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("save world: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save world: %w", err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("save world: %w", err)
	}
	return nil
}

// Lock takes the world's lock (a flock on WORLD.lock beside it, early.OpenLock) until the returned func is
// called, so concurrent execs on one world run one after the other. The world file itself is
// replaced by each save, so it cannot carry the lock.
func Lock(ctx context.Context, p string) (func(), error) {
	fd, errno := early.OpenLock(p)
	if errno != 0 {
		return nil, fmt.Errorf("lock world: %w", &fs.PathError{Op: "open", Path: p + early.LockSuffix, Err: unix.Errno(errno)})
	}
	f := os.NewFile(uintptr(fd), p+early.LockSuffix)
	done := make(chan error, 1)
	// The wait uses the descriptor's number, not f: f is closed only once
	// the flock call has returned, so the number is never another file's
	// while the call may still be made with it.
	go func() { done <- unix.Flock(fd, unix.LOCK_EX) }()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock world: %w", err)
		}
	case <-ctx.Done():
		// given up: once the call returns (the lock taken, or failed),
		// the close drops it
		go func() { <-done; f.Close() }()
		return nil, fmt.Errorf("lock world: %w", ctx.Err())
	}
	return func() { f.Close() }, nil
}

// Fork makes dst a world with src's bytes; dst must not exist and src is never opened for
// writing. No world file is ever written in place (Save writes a new file and renames it over
// the name), so a fork is a hard link to src's bytes: O(1) whatever the size, and independent,
// since the first save on either side gives that side a new file. Where a link cannot be made
// (another filesystem), the bytes are copied.
func Fork(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return fmt.Errorf("fork world: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("fork world: %s is not a regular file", src)
	}
	if err := os.Link(src, dst); err == nil {
		return nil
	} else if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("fork world: %w", err)
	}
	return copyWorld(src, dst)
}

func copyWorld(src, dst string) error {
	in, err := os.OpenFile(src, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("fork world: %w", err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("fork world: %w", err)
	}
	// Through *os.File on both sides io.Copy uses copy_file_range: a reflink where the
	// filesystem has them, an in-kernel copy elsewhere.
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(dst)
		return fmt.Errorf("fork world: %w", err)
	}
	if err := out.Close(); err != nil {
		os.Remove(dst)
		return fmt.Errorf("fork world: %w", err)
	}
	return nil
}
