package workspace_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestSession: a session in a fork runs each command over the fork's
// overlay (its writes land in the fork's upper layer, its .git read-only),
// holds the workspace while open, and in a pid 1 writes nothing.
func TestSession(t *testing.T) {
	s := newStore(t)
	if _, err := s.New(ctx, "p1", workspace.NewOptions{Repo: userRepo(t)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fork(ctx, "p1", "f"); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, sess *workspace.Session, script string) string {
		t.Helper()
		var out bytes.Buffer
		res, err := sess.Run(ctx, sandbox.Cmd{Argv: []string{"/bin/sh", "-c", script}}, sandbox.Stdio{Stdout: &out, Stderr: &out})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("run %q: %v %+v\n%s", script, err, res, out.String())
		}
		return out.String()
	}
	for _, name := range []string{"f", "p1"} {
		t.Run(name, func(t *testing.T) {
			sess, err := s.Session(ctx, name, sandbox.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			for _, c := range []struct{ script, want string }{
				{"echo one > new.txt", ""},
				{"cat new.txt lib/lib.go", "one\npackage lib\n\nconst V = 2\n"},
				{"(echo x > .git/config) 2>/dev/null && echo LEAK || echo refused", "refused\n"},
			} {
				if got := run(t, sess, c.script); got != c.want {
					t.Errorf("%q: %q, want %q", c.script, got, c.want)
				}
			}
			if err := s.Remove(t.Context(), name); !errors.Is(err, workspace.ErrInUse) && !errors.Is(err, workspace.ErrHasForks) {
				t.Errorf("removing a workspace a session holds: %v", err)
			}
		})
	}
	if got, _ := os.ReadFile(filepath.Join(s.Root, "f", "upper", "new.txt")); string(got) != "one\n" {
		t.Errorf("the fork's upper layer has %q", got)
	}
	if _, err := os.Stat(filepath.Join(s.Root, "p1", "tree", "new.txt")); err == nil {
		t.Errorf("a session in a pid 1 wrote its tree")
	}
	if err := s.Remove(t.Context(), "f"); err != nil {
		t.Errorf("the closed session still holds the fork: %v", err)
	}
}
