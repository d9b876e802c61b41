package workspace_test

import (
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestDiffUnchangedRunsNoGit: an overlay fork with nothing changed has an empty patch
// and stat, found with no git process (git is not on PATH); a changed fork
// does need git, which shows that PATH was what git is run from.
func TestDiffUnchangedRunsNoGit(t *testing.T) {
	s := newStore(t)
	if _, err := s.New(ctx, "p1", workspace.NewOptions{Repo: userRepo(t)}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"same", "changed"} {
		if _, err := s.Fork(ctx, "p1", f); err != nil {
			t.Fatal(err)
		}
	}
	if m, _ := s.Get(ctx, "same"); m.Method != workspace.MethodOverlay {
		// a copy fork holds the whole tree, and its diff always reads the base
		testutil.SkipOrFail(t, "fork method %s: no overlayfs here", m.Method)
	}
	execIn(t, s, "same", "cat main.go >/dev/null")
	execIn(t, s, "changed", "echo x >> main.go")
	t.Setenv("PATH", t.TempDir())
	for _, stat := range []bool{false, true} {
		d, err := s.Diff(ctx, "same", stat)
		if err != nil {
			t.Fatalf("diff (stat %v) of an unchanged fork: %v", stat, err)
		}
		if len(d.Patch) != 0 || d.Stat != "" {
			t.Errorf("unchanged fork: patch %q, stat %q", d.Patch, d.Stat)
		}
	}
	if _, err := s.Diff(ctx, "changed", false); err == nil || !strings.Contains(err.Error(), "git") {
		t.Errorf("a changed fork's diff with no git on PATH: %v", err)
	}
}
