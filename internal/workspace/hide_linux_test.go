package workspace_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestAttackWorkspaceHide: with FORKBOMB_HOME and the repository outside
// the folders the sandbox masks anyway (under /srv), a command in one fork
// lists and reads its sibling's layer, the store, the runs beside it and
// the repository's uncommitted files. Checked from outside — its output —
// it gets none of them and still works in its own tree, with overlay forks
// in the namespaces backend and copied forks in the Landlock one. Control:
// the same command unconfined gets every canary.
func TestAttackWorkspaceHide(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode   sandbox.Mode
		method workspace.Method
	}{
		{sandbox.ModeNamespaces, ""},
		{sandbox.ModeLandlock, workspace.MethodCopy},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			requireBackend(t, tc.mode)
			base, unmasked := testutil.OutsideDir(t)
			home, repo := filepath.Join(base, "home"), filepath.Join(base, "repo")
			secrets := map[string]string{}
			secret := func(what, path string) {
				c := fmt.Sprintf("CANARY-%s-%d", strings.ReplaceAll(what, " ", "-"), time.Now().UnixNano())
				secrets[what] = c
				write(t, path, c+"\n")
			}
			write(t, filepath.Join(repo, "main.txt"), "MAIN-OK\n")
			testutil.Git(t, repo, "init", "-q")
			testutil.Git(t, repo, "add", "-A")
			testutil.Git(t, repo, "commit", "-qm", "base")
			secret("uncommitted file", filepath.Join(repo, "notes.txt"))
			secret("other run", filepath.Join(home, "runs", "old", "run.json"))
			s, err := workspace.Open(filepath.Join(home, "workspaces"))
			if err != nil {
				t.Fatal(err)
			}
			s.ForkMethod = tc.method
			ctx := context.Background()
			if _, err := s.New(ctx, "p1", workspace.NewOptions{Repo: repo}); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"a", "b"} {
				if _, err := s.Fork(ctx, "p1", f); err != nil {
					t.Fatal(err)
				}
			}
			sib := fmt.Sprintf("CANARY-sibling-%d", time.Now().UnixNano())
			secrets["sibling's fix"] = sib
			run := func(name, script string, noSandbox bool) string {
				var out bytes.Buffer
				_, err := s.Exec(ctx, name, sandbox.Policy{Command: []string{"/bin/sh", "-c", script}, Mode: tc.mode,
					NoSandbox: noSandbox, Timeout: time.Minute}, sandbox.Stdio{Stdout: &out, Stderr: &out})
				if err != nil {
					t.Fatalf("exec in %s: %v\n%s", name, err, out.String())
				}
				return out.String()
			}
			run("a", "echo "+sib+" > fix.txt", false)
			probe := fmt.Sprintf(`for p in %[1]s %[1]s/workspaces %[1]s/workspaces/a %[1]s/runs %[2]s; do ls -laR "$p"; done
find %[1]s -type f -exec cat {} +; find %[2]s -name '*.txt' -exec cat {} +; cat main.txt`, home, repo)
			leaks := func(out string) []string {
				var got []string
				for what, c := range secrets {
					if strings.Contains(out, c) {
						got = append(got, what)
					}
				}
				return got
			}
			out := run("b", probe, false)
			if got := leaks(out); len(got) > 0 {
				t.Errorf("LEAK: a fork read %v:\n%s", got, out)
			}
			if !strings.Contains(out, "MAIN-OK") {
				t.Errorf("the fork lost its own tree:\n%s", out)
			}
			if got := leaks(run("b", probe, true)); len(got) != len(secrets) {
				t.Errorf("positive control: unconfined, the probe saw only %v of %d secrets", got, len(secrets))
			}
			if !unmasked {
				t.Log("the state is under a masked folder here: this run cannot tell Hide from the /tmp mask")
			}
		})
	}
}

// requireBackend skips a test whose backend this machine lacks, with the
// reason; with FORKBOMB_REQUIRE_ALL=1 (CI) that is a failure
// (testutil.SkipOrFail).
func requireBackend(t *testing.T, mode sandbox.Mode) {
	t.Helper()
	layer := map[sandbox.Mode]string{sandbox.ModeNamespaces: "user namespace", sandbox.ModeLandlock: "landlock-only fallback"}[mode]
	rep, err := sandbox.Probe(context.Background())
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	if l := rep.Layer(layer); l == nil || l.Status != "ok" {
		testutil.SkipOrFail(t, "the %s backend is unavailable here", mode)
	}
}
