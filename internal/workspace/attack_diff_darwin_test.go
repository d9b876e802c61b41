package workspace_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestSeatbeltDiffReadsNoHostFile: on macOS — forks cloned (APFS) or
// copied, read through layerfs one name at a time — whatever a fork names
// its files, the patch holds the link targets it made and the files it
// wrote, never a byte of a host file a link points to, and the diff
// returns. The probes of TestAttackDiffReadsNoHostFile but a name that is
// not UTF-8, which APFS refuses. Written, not yet run in this project's CI.
func TestSeatbeltDiffReadsNoHostFile(t *testing.T) {
	for _, method := range []workspace.Method{workspace.MethodReflink, workspace.MethodCopy} {
		t.Run(string(method), func(t *testing.T) {
			s := newStore(t)
			s.ForkMethod = method
			if _, err := s.New(ctx, "p1", workspace.NewOptions{Repo: userRepo(t)}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Fork(ctx, "p1", "f"); err != nil {
				t.Fatal(err)
			}
			secret := plantTraps(t, s, "f", false)
			// Positive control: followed, the planted link reads the host file.
			if data, err := os.ReadFile(filepath.Join(s.Root, "f", "tree", "foo")); err != nil || !strings.Contains(string(data), hostSecret) {
				t.Fatalf("control: the planted link does not lead to the host file (%v)", err)
			}
			d, err := diffWithin(t, s, "f")
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(d.Patch, []byte(hostSecret)) || bytes.Contains(d.Patch, []byte("*.leak")) {
				t.Fatalf("LEAK: the patch holds a host file's content:\n%s", d.Patch)
			}
			if !bytes.Contains(d.Patch, []byte("x.leak")) {
				t.Errorf("x.leak missing: the .gitignore link was read as ignore rules")
			}
			applied := applyToBase(t, s, "p1", d.Patch)
			for name, want := range map[string]string{"foo\r": "decoy\n", "bar\n_": "decoy\n", "zero\r": "decoy\n", "pipe\r": "decoy\n"} {
				if got, err := os.ReadFile(filepath.Join(applied, name)); err != nil || string(got) != want {
					t.Errorf("%q after apply: %q, %v", name, got, err)
				}
			}
			for _, link := range []string{"foo", "bar", ".gitignore"} {
				if target, err := os.Readlink(filepath.Join(applied, link)); err != nil || !strings.HasPrefix(target, filepath.Dir(secret)) {
					t.Errorf("%q after apply: want the planted link, got %q, %v", link, target, err)
				}
			}
			if _, err := os.Lstat(filepath.Join(applied, "pipe")); err == nil {
				t.Error("a FIFO became part of the patch")
			}
		})
	}
}
