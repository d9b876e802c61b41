package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
)

// filepathWalkChmod makes every directory below dir writable by its owner so
// that a following RemoveAll succeeds.
func filepathWalkChmod(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() {
				_ = os.Chmod(path, 0o700)
			}
			return nil
		}
		if d.IsDir() {
			_ = os.Chmod(path, 0o700)
		}
		return nil
	})
}
