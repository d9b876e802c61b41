// Package atomicfile replaces a file's contents all at once, for the files forkbomb keeps as
// a whole (a run's run.json and patches, a stored task, the eval board, the canary's cache; a
// world's save is the same steps in internal/world, which imports nothing outside its
// fingerprint): a reader, another forkbomb or a crash sees the old file or the new one, never
// a torn one.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
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
