package run_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/run"
)

// TestRaceRefusedPatch: a fork whose changes cannot be read safely — a
// sparse 6 GB file, and a decoy named like a link to a host file plus "\r"
// — ships no host byte: the sparse fork fails with a verdict naming the
// limit, the decoy's patch holds only what the fork wrote, and the honest
// fork still wins.
func TestRaceRefusedPatch(t *testing.T) {
	t.Parallel()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("HOST-SECRET-in-race\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := options(t, repo(t))
	o.Forks = 3
	o.All = true
	o.Engine = engine.Command{Argv: []string{"/bin/sh", "-c", `case $FORKBOMB_FORK in
0) sed -i 's/\$1 - \$2/$1 + $2/' lib.sh ;;
1) truncate -s 6G big ;;
2) sed -i 's/\$1 - \$2/$1 + $2/' lib.sh; ln -s '` + secret + `' notes; printf 'decoy\n' > "$(printf 'notes\r')" ;;
esac`}}
	r, recDir, err := run.Race(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Fork[1].Verdict != event.Fail || !strings.Contains(r.Fork[1].Reason, `"big" is 6.0 GiB`) {
		t.Errorf("the sparse fork: verdict %q, reason %q", r.Fork[1].Verdict, r.Fork[1].Reason)
	}
	if r.Winner == nil || *r.Winner == 1 {
		t.Errorf("winner %v", r.Winner)
	}
	err = filepath.WalkDir(recDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if strings.Contains(string(data), "HOST-SECRET") {
			t.Errorf("LEAK: %s holds the host file's content", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	patch, _ := os.ReadFile(filepath.Join(recDir, "forks", "2", "patch"))
	if !strings.Contains(string(patch), "decoy") || !strings.Contains(string(patch), secret) {
		t.Errorf("fork 2's patch should hold its decoy and its link target:\n%s", patch)
	}
}
