package judge

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRemoveStaleWarm: a warmed layer's folder is removed only when nobody
// holds its lock — its judge is gone — and never while its owner holds it,
// nor before its owner has made it (no lock file yet), nor anything else in
// the cache folder.
func TestRemoveStaleWarm(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	mk := func(name string) string {
		d, err := os.MkdirTemp(cache, name)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	live := mk(warmDirPrefix + "1-*")
	held, err := lockWarm(live, false)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	gone := mk(warmDirPrefix + "2-*")
	f, err := lockWarm(gone, false)
	if err != nil {
		t.Fatal(err)
	}
	f.Close() // its judge ended without its Close
	os.MkdirAll(filepath.Join(gone, "upper", "00"), 0o700)
	young := mk(warmDirPrefix + "3-*") // its owner has not locked it yet
	other := mk("gocache-*")
	removeStaleWarm(cache)
	for _, d := range []string{live, young, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(d), err)
		}
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("the folder nobody holds was kept: %v", err)
	}
}
