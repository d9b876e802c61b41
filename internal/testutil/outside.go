package testutil

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// OutsideDir makes a folder for a test outside every folder the sandbox
// masks anyway (/tmp, /var/tmp, /run, the homes), and removes it when the
// test ends. forkbomb's state and hidden tests can live anywhere
// (FORKBOMB_HOME=/srv/...); a test that keeps them under /tmp passes
// whether or not they are hidden. FORKBOMB_TEST_OUTSIDE names a folder to
// try first (an unprivileged user can write none of the others). When no
// such folder is writable, the test's own temp dir is returned with
// unmasked false: the attack still runs, but a control proving the place
// would leak without the mask cannot, and the test says so in its log.
func OutsideDir(t testing.TB) (dir string, unmasked bool) {
	t.Helper()
	home, _ := os.UserHomeDir()
	masked := []string{"/tmp", "/var/tmp", "/run", "/home", "/root", os.TempDir(), home}
	for _, base := range []string{os.Getenv("FORKBOMB_TEST_OUTSIDE"), "/srv", "/mnt", "/opt"} {
		if base == "" {
			continue
		}
		if c, err := filepath.EvalSymlinks(base); err == nil {
			base = c
		}
		if under(base, masked) {
			continue
		}
		d, err := os.MkdirTemp(base, "forkbomb-test-")
		if err != nil {
			continue
		}
		// Readable by other users, as a shared /srv is.
		os.Chmod(d, 0o755)
		t.Cleanup(func() { removeTree(d) })
		return d, true
	}
	if RequireAll() {
		t.Fatalf("%s=1 but no folder outside the masked ones is writable here (set FORKBOMB_TEST_OUTSIDE)", RequireAllEnv)
	}
	t.Logf("no folder outside the masked ones is writable here (set FORKBOMB_TEST_OUTSIDE); using the test's temp dir")
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d, false
}

func under(p string, bases []string) bool {
	for _, b := range bases {
		if b != "" && (p == b || strings.HasPrefix(p, strings.TrimSuffix(b, "/")+"/")) {
			return true
		}
	}
	return false
}

// removeTree removes a tree an overlay worked in (overlayfs leaves
// mode-0 folders behind).
func removeTree(d string) {
	if os.RemoveAll(d) == nil {
		return
	}
	filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	os.RemoveAll(d)
}

// OpenOverlayWork lets t.TempDir's cleanup remove the workspaces under
// dir when the tests run unprivileged: overlayfs leaves its work folders
// (work/work, and work/work/incompat of a volatile mount) mode 000, which
// only their owner may open up again.
func OpenOverlayWork(t testing.TB, dir string) {
	t.Cleanup(func() { openDirs(dir) })
}

// openDirs makes every folder under dir readable by its owner, each
// before it is read.
func openDirs(dir string) {
	os.Chmod(dir, 0o700)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			openDirs(filepath.Join(dir, e.Name()))
		}
	}
}
