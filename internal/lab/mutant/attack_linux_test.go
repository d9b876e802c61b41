package mutant_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/lab/mutant"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestAttackMutantTests: the tests of every mutant (and of the untouched
// run) try to delete the user's repository and a folder of the host, and
// to write into both; checked from outside afterwards, both are as they
// were. The control runs the same command unconfined against copies and
// sees them destroyed.
func TestAttackMutantTests(t *testing.T) {
	testutil.Need(t, "git", "python3")
	outside, unmasked := testutil.OutsideDir(t)
	repo := filepath.Join(outside, "repo")
	victim := filepath.Join(outside, "victim")
	for _, d := range []string{repo, victim} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(repo, "m.py"), []byte("def f():\n    return 1 + 1\n"), 0o644)
	os.WriteFile(filepath.Join(victim, "keep.txt"), []byte("keep\n"), 0o644)
	testutil.Git(t, repo, "init", "-q")
	testutil.Git(t, repo, "add", "-A")
	testutil.Git(t, repo, "commit", "-qm", "base")
	attack := func(repo, victim string) string {
		return `python3 -c 'import m; assert m.f() == 2'; rc=$?
rm -rf ` + repo + ` ` + victim + ` 2>/dev/null
echo pwned > ` + repo + `/pwned 2>/dev/null; echo pwned > ` + victim + `/pwned 2>/dev/null
rm -rf ./* 2>/dev/null
exit $rc`
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := mutant.Run(ctx, mutant.Options{Store: newStore(t), Repo: repo, Test: attack(repo, victim), Forks: 2, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Status != mutant.Killed {
			t.Errorf("%s: %s, want Killed", r.ID, r.Status)
		}
	}
	if len(rep.Results) < 3 {
		t.Errorf("%d mutants, want 3", len(rep.Results))
	}
	for _, p := range []string{filepath.Join(repo, "m.py"), filepath.Join(repo, ".git", "HEAD"), filepath.Join(victim, "keep.txt")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, p := range []string{filepath.Join(repo, "pwned"), filepath.Join(victim, "pwned")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	if out := testutil.Git(t, repo, "status", "--porcelain"); out != "" {
		t.Errorf("the repository changed:\n%s", out)
	}

	// Control: unconfined, the same command destroys copies of both.
	if !unmasked {
		t.Log("no folder outside the masked ones: the control runs in the test's temp dir")
	}
	crepo, cvictim := filepath.Join(outside, "control-repo"), filepath.Join(outside, "control-victim")
	for _, d := range []string{crepo, cvictim} {
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "m.py"), []byte("def f():\n    return 1 + 1\n"), 0o644)
	}
	work := t.TempDir()
	os.WriteFile(filepath.Join(work, "m.py"), []byte("def f():\n    return 1 + 1\n"), 0o644)
	c := exec.Command("sh", "-c", attack(crepo, cvictim))
	c.Dir = work
	out, _ := c.CombinedOutput()
	for _, d := range []string{crepo, cvictim} {
		if _, err := os.Stat(filepath.Join(d, "m.py")); err == nil {
			t.Errorf("control: %s/m.py survived unconfined: the probe would not see an attack\n%s", d, out)
		}
	}
}
