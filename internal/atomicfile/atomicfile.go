// Package atomicfile replaces a file's contents all at once, for the files forkbomb keeps as
// a whole (a run's run.json and patches, a stored task, the eval board, the canary's cache; a
// world's save is the same steps in internal/world, which imports nothing outside its
// fingerprint): a reader, another forkbomb or a crash sees the old file or the new one, never
// a torn one. Read and Update serve the small caches kept that way (the canary's results, the
// agent CLIs found in a cluster's images): a bounded read that follows no link, and a change
// made under a lock.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Write replaces path with data: written to a fresh temporary file in path's folder (created
// exclusively, mode 0600, so nothing planted at its name is followed; its name starts with a
// dot, so listings that skip hidden names skip it), synced, then renamed over path — which
// replaces a symbolic link at path rather than writing through it. A failure leaves path as
// it was and no temporary file behind; the error names path.
func Write(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Read is path's contents, nil where it does not exist. A path that is not a regular file (a
// symbolic link at path is not followed; a fifo is not waited on) or is larger than max bytes
// is an error naming it.
func Read(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("read %s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("read %s: larger than %d bytes", path, max)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// Update replaces path with what change makes of its contents (Read's: nil where there are
// none yet), holding an exclusive lock on path+".lock" throughout, so that forkbomb processes
// updating the same file one after another each see the other's change. Its folder is made
// (0700) where it is missing. An error from change leaves path as it was.
func Update(path string, max int64, change func(old []byte) ([]byte, error)) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("update %s: %w", path, err)
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("update %s: %w", path, err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("update %s: lock: %w", path, err)
	}
	old, err := Read(path, max)
	if err != nil {
		return err
	}
	data, err := change(old)
	if err != nil {
		return err
	}
	return Write(path, data)
}
