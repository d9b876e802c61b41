//go:build unix

package testutil

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// ObjectFiles maps the object files of the git repository whose .git is
// gitDir — its packs, their indexes and reverse indexes, and its loose
// objects: the files a snapshot's seeding links — to their inodes, by
// their path under objects/.
func ObjectFiles(t testing.TB, gitDir string) map[string]uint64 {
	t.Helper()
	dir := filepath.Join(gitDir, "objects")
	out := map[string]uint64{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		folder, name := filepath.Base(filepath.Dir(p)), filepath.Base(p)
		if folder == "pack" && !(strings.HasPrefix(name, "pack-") && (strings.HasSuffix(name, ".pack") || strings.HasSuffix(name, ".idx") || strings.HasSuffix(name, ".rev"))) ||
			folder != "pack" && len(folder) != 2 {
			return nil
		}
		fi, err := os.Stat(p)
		if err == nil {
			rel, _ := filepath.Rel(dir, p)
			out[rel] = fi.Sys().(*syscall.Stat_t).Ino
		}
		return err
	})
	if err != nil || len(out) == 0 {
		t.Fatalf("object files of %s: %d, %v", gitDir, len(out), err)
	}
	return out
}
