package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// TestAttackGitMovedBetweenRuns is why the .git scan of a plain tree is
// redone for every start rather than remembered from the last one over
// the same tree: a command may rename a folder that holds a nested
// repository (only the bind itself cannot be moved, not its ancestors),
// and the next command must find that .git where it now is. The control
// hands the sandbox what the scan found before the move — what a cache
// would — and sees the hook written.
func TestAttackGitMovedBetweenRuns(t *testing.T) {
	requireLayer(t, "mount namespace")
	wd := gitFixture(t, "") // a repository with a nested one in sub/
	stale, err := sandbox.FindGitDirs(wd)
	if err != nil {
		t.Fatal(err)
	}
	if o := runPolicy(t, shPolicy(sandbox.ModeNamespaces, wd, "mv sub moved")); o.err != nil || o.code() != 0 {
		t.Fatalf("moving a folder that holds a nested repository failed: code %d, %v", o.code(), o.err)
	}
	if _, err := os.Stat(filepath.Join(wd, "moved", ".git", "HEAD")); err != nil {
		t.Fatalf("the nested repository was not moved: %v", err)
	}
	hook := filepath.Join(wd, "moved", ".git", "hooks", "post-checkout")
	const attack = "mkdir -p moved/.git/hooks; echo evil > moved/.git/hooks/post-checkout; echo ran > ran.txt"
	t.Run("rescanned", func(t *testing.T) {
		// ran.txt, written in the tree after the attack: the command ran to its end
		if o := runPolicy(t, shPolicy(sandbox.ModeNamespaces, wd, attack)); o.err != nil || readFile(t, filepath.Join(wd, "ran.txt")) != "ran\n" {
			t.Fatalf("the attack did not run: %v: %s", o.err, o.all())
		}
		if strings.Contains(readFile(t, hook), "evil") {
			t.Errorf("LEAK: a hook was written into the moved nested repository's .git")
		}
	})
	t.Run("control", func(t *testing.T) {
		p := shPolicy(sandbox.ModeNamespaces, wd, attack)
		p.GitDirs = stale
		runPolicy(t, p)
		if !strings.Contains(readFile(t, hook), "evil") {
			t.Fatal("positive control: with the scan from before the move, the hook write was not seen")
		}
	})
}
