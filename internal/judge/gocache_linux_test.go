package judge_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestJudgeGoCacheKept attacks the kept build cache: the baseline's Go
// build cache is kept and laid under every patched run, and a patch whose
// code writes everywhere in GOCACHE it can reach (a marker file, and every
// cache entry it finds overwritten) changes neither the kept layer nor the
// user's cache, and a patch judged after it sees none of it. Every judged
// copy is seen at one path, so the cache applies (the positive control: a
// test that prints its folder, the same in both runs).
func TestJudgeGoCacheKept(t *testing.T) {
	testutil.Need(t, "go")
	gocache := goEnv(t, "GOCACHE")
	if fi, err := os.Stat(gocache); err != nil || !fi.IsDir() {
		testutil.SkipNotApplicable(t, "no Go build cache at %s: nothing to keep", gocache)
	}
	marker := fmt.Sprintf("forkbomb-poison-%d", os.Getpid())
	files := map[string]string{}
	for k, v := range goFiles {
		files[k] = v
	}
	files["where_test.go"] = `package calc

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWhere(t *testing.T) {
	wd, _ := os.Getwd()
	t.Log("judged at " + wd)
	if _, err := os.Stat(filepath.Join(os.Getenv("GOCACHE"), "` + marker + `")); err == nil {
		t.Fatal("POISONED: a marker another run wrote is in GOCACHE")
	}
}
`
	repo := fixture(t, files)
	poison := `package calc

import (
	"io/fs"
	"os"
	"path/filepath"
)

// init writes a marker into GOCACHE and overwrites the cache entries it
// finds, up to a bound (the user's cache may be large).
func init() {
	c := os.Getenv("GOCACHE")
	os.WriteFile(filepath.Join(c, "` + marker + `"), []byte("x"), 0o644)
	n := 0
	filepath.WalkDir(c, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && n < 2000 {
			n++
			os.WriteFile(p, []byte("poisoned"), 0o644)
		}
		return nil
	})
}
`
	s, err := workspace.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	cacheDir := filepath.Join(t.TempDir(), "cache")
	ctx := context.Background()
	j, err := judge.Prepare(ctx, judge.Options{Store: s, CacheDir: cacheDir, Repo: repo, Test: "go test -v ./...", Warm: true})
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := j.WaitWarm(ctx); !ok {
		t.Fatalf("the build cache was not warmed: %s", why)
	}
	layers, _ := filepath.Glob(filepath.Join(cacheDir, "bases", "base-*", "gocache-*", "upper"))
	if len(layers) != 1 {
		t.Fatalf("the baseline's build cache was not kept in its base's folder: %v", layers)
	}
	// the warmed layer (warm.go) is attacked alike
	warmed, _ := filepath.Glob(filepath.Join(cacheDir, "warm-*", "upper"))
	if len(warmed) != 1 {
		t.Fatalf("the warmed build cache is not in the cache folder: %v", warmed)
	}
	layers = append(layers, warmed[0])
	before := treeHash(t, layers[0]) + " " + treeHash(t, layers[1])
	if empty := treeHash(t, t.TempDir()); strings.Contains(before, empty) {
		t.Fatalf("a kept build cache is empty")
	}
	where := map[string]bool{}
	for _, c := range []struct {
		name  string
		edits map[string]edit
		pass  bool
	}{
		{"poisons GOCACHE", map[string]edit{"calc.go": {content: goFixed}, "poison.go": {content: poison}}, false},
		{"honest fix, judged after", map[string]edit{"calc.go": {content: goFixed}}, true},
	} {
		vs, err := j.Judge(ctx, [][]byte{makePatch(t, repo, map[string]edit(c.edits))})
		if err != nil {
			t.Fatal(err)
		}
		if v := vs[0]; (v.Verdict == event.Pass) != c.pass {
			t.Errorf("%s: pass = %v, want %v: %s\n%s", c.name, v.Verdict == event.Pass, c.pass, v.Reason, tail(v.Output))
		}
		// go test -json: the log line is a JSON string, its newline escaped
		for _, line := range strings.Split(vs[0].Output, "\n") {
			if _, at, ok := strings.Cut(line, "judged at "); ok {
				at, _, _ = strings.Cut(at, `\n`)
				at, _, _ = strings.Cut(at, `"`)
				where[strings.TrimSpace(at)] = true
			}
		}
	}
	if after := treeHash(t, layers[0]) + " " + treeHash(t, layers[1]); after != before {
		t.Errorf("LEAK: a patched run changed a kept build cache")
	}
	j.Close()
	if _, err := os.Stat(warmed[0]); !os.IsNotExist(err) {
		t.Errorf("Close left the warmed build cache: %v", err)
	}
	if _, err := os.Stat(filepath.Join(gocache, marker)); err == nil {
		os.Remove(filepath.Join(gocache, marker))
		t.Errorf("LEAK: a patched run wrote into the user's GOCACHE")
	}
	if len(where) != 1 {
		t.Errorf("judged copies were seen at %d paths, want one: %v", len(where), where)
	}

	// workspace prune --bases: the base goes, and what the judge kept for
	// it with it; made again, its baseline runs and keeps a cache again
	// what a base's own baseline run could leave in its kept cache: a link
	// to a folder outside, and a folder of mode 0 above it
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "keep"), []byte("x"), 0o600)
	locked := filepath.Join(layers[0], "locked")
	os.Mkdir(locked, 0o700)
	if err := os.Symlink(outside, filepath.Join(locked, "out")); err != nil {
		t.Fatal(err)
	}
	os.Chmod(locked, 0)
	forget := func(m *workspace.Meta) error { return judge.ForgetBase(cacheDir, m.Name) }
	// (a process another test starts holds a copy of the hold's
	// descriptor until its exec: a deadline, as a loaded machine may
	// delay that exec)
	for deadline := time.Now().Add(30 * time.Second); ; {
		p, err := s.Prune(ctx, workspace.PruneOptions{Also: judge.IsBase, Forget: forget})
		if err == nil && len(p.Removed) == 1 {
			if len(p.Errors) != 0 {
				t.Fatalf("prune --bases: %v", p.Errors)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("prune --bases: %+v %v", p, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := judge.SweepForgotten(cacheDir); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"bases", "judged"} {
		// judged/ is made only where a copy cannot be seen at the
		// repository's own path (judgedAt)
		if left, err := os.ReadDir(filepath.Join(cacheDir, d)); (err != nil && !(d == "judged" && errors.Is(err, fs.ErrNotExist))) || len(left) != 0 {
			t.Errorf("%s of the pruned base left in the judge's cache: %v %v", d, left, err)
		}
	}
	if data, err := os.ReadFile(filepath.Join(outside, "keep")); err != nil || string(data) != "x" {
		t.Errorf("the removal followed a link out of the kept cache: %q %v", data, err)
	}
	j, err = judge.Prepare(ctx, judge.Options{Store: s, CacheDir: cacheDir, Repo: repo, Test: "go test -v ./..."})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if again, _ := filepath.Glob(filepath.Join(cacheDir, "bases", "base-*", "gocache-*", "upper")); len(again) != 1 {
		t.Errorf("the base made again kept no build cache: %v", again)
	}
}

func goEnv(t *testing.T, name string) string {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// treeHash hashes the names, modes and contents of a tree.
func treeHash(t *testing.T, dir string) string {
	h := sha256.New()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			fmt.Fprintf(h, "%s error\n", p)
			return nil
		}
		fi, _ := d.Info()
		fmt.Fprintf(h, "%s %v\n", strings.TrimPrefix(p, dir), fi.Mode())
		if d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			h.Write(data)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))
}

// TestJudgeWarmSentinels: over the warmed build cache (warm.go) a patch
// that changes no Go source compiles no package of the module again, its
// sentinels' tests included, and its sentinels are still planted and
// checked. The control, the same judge unwarmed, compiles the package's
// tests again (its sentinels are new to the cache).
func TestJudgeWarmSentinels(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "go")
	if fi, err := os.Stat(goEnv(t, "GOCACHE")); err != nil || !fi.IsDir() {
		testutil.SkipNotApplicable(t, "no Go build cache: nothing to keep")
	}
	repo := fixture(t, goFiles)
	patch := makePatch(t, repo, map[string]edit{"NOTES.md": {content: "notes\n"}})
	s, err := workspace.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	cacheDir := filepath.Join(t.TempDir(), "cache")
	ctx := t.Context()
	// go test -x prints each compiler run; a package found in the cache
	// has none.
	compiles := func(out string) int {
		n := 0
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "/compile ") && strings.Contains(line, "-p example.com/calc ") {
				n++
			}
		}
		return n
	}
	for _, warm := range []bool{false, true} {
		j, err := judge.Prepare(ctx, judge.Options{Store: s, CacheDir: cacheDir, Repo: repo, Test: "go test -x ./...", Warm: warm})
		if err != nil {
			t.Fatal(err)
		}
		if warm {
			if ok, why := j.WaitWarm(ctx); !ok {
				t.Fatalf("the build cache was not warmed: %s", why)
			}
		}
		vs, err := j.Judge(ctx, [][]byte{patch})
		j.Close()
		if err != nil {
			t.Fatal(err)
		}
		v := vs[0]
		if v.Sentinels == nil || v.Sentinels.Runner != "go" || v.Sentinels.Checked == 0 || len(v.Sentinels.Wrong) > 0 {
			t.Errorf("warm=%v: the sentinels were not planted and checked: %+v", warm, v.Sentinels)
		}
		n := compiles(v.Output)
		switch {
		case warm && n != 0:
			t.Errorf("over the warmed build cache the patch compiled example.com/calc %d time(s):\n%s", n, tail(v.Output))
		case !warm && n == 0:
			t.Errorf("control: unwarmed, the patch compiled example.com/calc's tests nowhere the check sees:\n%s", tail(v.Output))
		}
	}
}
