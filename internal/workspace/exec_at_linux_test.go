package workspace_test

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestExecAt: two overlay forks run at once at one path of the caller's
// (the judge's: a Go build cache keys on the folder), each sees its own
// tree there and writes into its own upper layer, the .git there stays
// read-only, and the folder stays empty on the host.
func TestExecAt(t *testing.T) {
	s := newStore(t)
	if _, err := s.New(ctx, "p1", workspace.NewOptions{Repo: userRepo(t)}); err != nil {
		t.Fatal(err)
	}
	at := t.TempDir()
	outs := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, f := range []string{"a", "b"} {
		m, err := s.Fork(ctx, "p1", f)
		if err != nil {
			t.Fatal(err)
		}
		if m.Method != workspace.MethodOverlay {
			t.Skipf("forks are %s here, not overlays: a caller's path is not used", m.Method)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			script := `echo ` + f + ` > mine; sleep 0.3; pwd; cat mine; ls lib; touch .git/x 2>/dev/null && echo GIT-WRITABLE; true`
			p := sandbox.Policy{Workdir: at, Overlay: &sandbox.Overlay{Volatile: true}, Command: []string{"/bin/sh", "-c", script}}
			res, err := s.Exec(ctx, f, p, sandbox.Stdio{Stdout: &out, Stderr: &out})
			if err != nil || res.ExitCode != 0 {
				t.Errorf("exec in %s at %s: %v %+v\n%s", f, at, err, res, out.String())
			}
			mu.Lock()
			outs[f] = out.String()
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, f := range []string{"a", "b"} {
		if want := at + "\n" + f + "\nlib.go\n"; outs[f] != want {
			t.Errorf("fork %s at the caller's path: got %q, want %q", f, outs[f], want)
		}
		// A fork run volatile is not mounted again (overlayfs refuses
		// it after a volatile mount): read its layers from outside.
		d, err := s.Diff(ctx, f, false)
		if err != nil || !bytes.Contains(d.Patch, []byte("+++ b/mine\n@@ -0,0 +1 @@\n+"+f+"\n")) {
			t.Errorf("fork %s: its write is not in its own layer: %v\n%s", f, err, d.Patch)
		}
	}
	// A volatile mount leaves overlayfs's incompat/volatile folder
	// (mode 0) in the fork's work folder: removal still takes it all,
	// unprivileged too.
	for _, f := range []string{"a", "b"} {
		if err := s.Remove(t.Context(), f); err != nil {
			t.Errorf("remove volatile fork %s: %v", f, err)
		}
	}
	if entries, _ := os.ReadDir(at); len(entries) != 0 {
		t.Errorf("the caller's folder is not empty on the host: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(at, ".git")); err == nil {
		t.Errorf("LEAK: a .git appeared on the host")
	}
}
