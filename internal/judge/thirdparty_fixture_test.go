package judge_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// Real third-party suites, each with one broken function in its base
// commit, one honest fix and the gaming patches of issue 8 §3. Their
// sources come through the ordinary clients at pinned versions: go-cmp
// from the Go module cache (`go mod download`), toolz from Debian's
// python3-toolz, qs and tape from an `npm ci` of a committed lockfile.
// scripts/test installs the Debian packages; the module and npm caches
// are filled on first use.

const thirdparty = "testdata/thirdparty"

// thirdpartyFile returns a file of testdata/thirdparty.
func thirdpartyFile(t *testing.T, rel string) string {
	t.Helper()
	return testdataFile(t, filepath.Join("thirdparty", rel))
}

// testdataFile returns a file of testdata (a gaming patch's code, say).
func testdataFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// copyTree copies the folders, regular files and symbolic links of src
// into dst, leaving out what skip names (by slash path relative to src).
// Files are made writable: the module cache's are read-only.
func copyTree(t testing.TB, src, dst string, skip func(rel string) bool) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel != "." && skip != nil && skip(filepath.ToSlash(rel)) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, to)
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			mode := os.FileMode(0o644)
			if fi, err := d.Info(); err == nil && fi.Mode()&0o111 != 0 {
				mode = 0o755
			}
			return os.WriteFile(to, data, mode)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}

// breakFile replaces old (which must occur exactly once) with new in a
// file of dir, and returns the file's content before and after: the
// honest fix and the broken base.
func breakFile(t testing.TB, dir, rel, old, new string) (pristine, broken string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	pristine = string(b)
	if n := strings.Count(pristine, old); n != 1 {
		t.Fatalf("%s holds %q %d times, want once: has the pinned version changed?", rel, old, n)
	}
	broken = strings.Replace(pristine, old, new, 1)
	if err := os.WriteFile(filepath.Join(dir, rel), []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	return pristine, broken
}

// commitTree commits dir as the base of a new repository. Nothing is
// ignored: a committed node_modules is the point of one suite.
func commitTree(t testing.TB, dir string) string {
	t.Helper()
	os.Remove(filepath.Join(dir, ".gitignore"))
	testutil.Git(t, dir, "init", "-q")
	testutil.Git(t, dir, "add", "-A", "-f")
	testutil.Git(t, dir, "commit", "-qm", "base")
	return dir
}

// runClient runs a client command (go, npm) in dir, returning its combined
// output and error.
func runClient(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// withPatches gives each case the patch of its edits as raw text. Unlike
// makePatch it checks nothing out (a committed node_modules is thousands
// of files) and keeps the diff untrimmed: a hunk that ends on blank
// context lines (" \n") loses them to a trim and no longer applies.
func withPatches(t *testing.T, repo string, cases []judged) []judged {
	t.Helper()
	for i := range cases {
		if cases[i].raw != nil {
			continue
		}
		tmp := t.TempDir()
		wt := filepath.Join(tmp, "wt")
		testutil.Git(t, tmp, "clone", "-q", "--shared", "--no-checkout", repo, wt)
		testutil.Git(t, wt, "read-tree", "HEAD")
		for p, e := range cases[i].edits {
			switch {
			case e.to != "":
				t.Fatalf("%s: withPatches makes no renames", cases[i].name)
			case e.del:
				testutil.Git(t, wt, "update-index", "--force-remove", "--", p)
			default:
				blob := filepath.Join(tmp, "blob")
				if err := os.WriteFile(blob, []byte(e.content), 0o644); err != nil {
					t.Fatal(err)
				}
				sha := testutil.Git(t, wt, "hash-object", "-w", "--", blob)
				testutil.Git(t, wt, "update-index", "--add", "--cacheinfo", "100644,"+sha+","+p)
			}
		}
		out, err := runClient(wt, []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + wt},
			"git", "diff", "--cached", "--binary")
		if err != nil || out == "" {
			t.Fatalf("%s: git diff: %v\n%s", cases[i].name, err, out)
		}
		cases[i].raw = []byte(out)
	}
	return cases
}
