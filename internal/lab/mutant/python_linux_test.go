package mutant_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/lab/mutant"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// toolzDir is where Debian 12's python3-toolz installs toolz with its own
// pytest suite.
const toolzDir = "/usr/lib/python3/dist-packages"

// TestMutantsPythonToolz: mutants of toolz's frequencies(), tested by its
// own suite: the counting line's mutants are killed, its docstring's
// survives.
func TestMutantsPythonToolz(t *testing.T) {
	testutil.NeedPytest(t)
	if _, err := os.Stat(filepath.Join(toolzDir, "toolz", "tests", "test_itertoolz.py")); err != nil {
		testutil.SkipOrFail(t, "toolz's suite is not installed (scripts/test installs python3-toolz): %v", err)
	}
	files := map[string]string{}
	for _, pkg := range []string{"toolz", "tlz"} {
		root := filepath.Join(toolzDir, pkg)
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".py") {
				return err
			}
			b, err := os.ReadFile(p)
			rel, _ := filepath.Rel(toolzDir, p)
			files[filepath.ToSlash(rel)] = string(b)
			return err
		})
	}
	src := files["toolz/itertoolz.py"]
	count := lineOf(t, src, "        d[item] += 1\n")
	doc := lineOf(t, src, `""" Find number of occurrences of each value in seq`)
	repo := repoOf(t, files)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := mutant.Run(ctx, mutant.Options{
		Store: newStore(t), Repo: repo, Forks: 2,
		Test:   "/usr/bin/python3 -m pytest -q -x -p no:cacheprovider toolz/tests/test_itertoolz.py",
		Paths:  []string{"toolz/itertoolz.py"},
		Filter: func(m mutant.Mutant) bool { return m.Line == count || m.Line == doc },
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]mutant.Status{}
	for _, r := range rep.Results {
		got[r.Operator+" "+r.Original+"→"+r.Replacement] = r.Status
	}
	want := map[string]mutant.Status{
		"AssignmentOperator +=→-=": mutant.Killed,
		"NumberLiteral 1→2":        mutant.Killed,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %q, want %s (all: %v)", k, got[k], w, got)
		}
	}
	survived := false
	for _, r := range rep.Results {
		if r.Line == doc && r.Operator == "StringLiteral" {
			survived = r.Status == mutant.Survived
		}
	}
	if !survived {
		t.Errorf("the docstring's mutant did not survive: %v", got)
	}
}

func lineOf(t *testing.T, src, s string) int {
	t.Helper()
	i := strings.Index(src, s)
	if i < 0 {
		t.Fatalf("%q not in the source", s)
	}
	return 1 + strings.Count(src[:i], "\n")
}
