package run_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestRaceForkSeesNothingOutside: FORKBOMB_HOME (workspaces, runs, judge
// baselines), the hidden tests and the repository all live outside the
// folders the sandbox masks anyway (under /srv). Fork 0 writes a "fix" and
// works on; once the fix is in fork 0's layer, fork 1 looks for it there,
// lists and reads the runs, the baselines, the hidden tests and the
// repository's uncommitted file, keeps what it found in its tree, and fixes
// the bug (so it wins and the race ends fork 0). Checked from
// outside — fork 1's patch and agent log in the record — it got none of
// it. Control: the same probe, unconfined, over the same layout (with a
// stand-in sibling layer) gets every canary.
func TestRaceForkSeesNothingOutside(t *testing.T) {
	t.Parallel()
	base, unmasked := testutil.OutsideDir(t)
	home, hidden, repoDir := filepath.Join(base, "home"), filepath.Join(base, "hidden"), filepath.Join(base, "repo")
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(repoDir, "lib.sh"), "add() { echo $(($1 - $2)); }\n")
	write(filepath.Join(repoDir, "check.sh"), ". ./lib.sh\n[ \"$(add 2 3)\" = 5 ] && echo '1 passed, 0 failed' || { echo '0 passed, 1 failed'; exit 1; }\n")
	testutil.Git(t, repoDir, "init", "-q")
	testutil.Git(t, repoDir, "add", "-A")
	testutil.Git(t, repoDir, "commit", "-qm", "base")

	stamp := time.Now().UnixNano()
	secrets := map[string]string{}
	for what, path := range map[string]string{
		"other run's winner": filepath.Join(home, "runs", "old-run", "winner.patch"),
		"judge baseline":     filepath.Join(home, "judge", "bases", "base-0123456789abcdef", "baseline-old.json"),
		"hidden test":        filepath.Join(hidden, "hidden_check.sh"),
		"uncommitted file":   filepath.Join(repoDir, "notes.txt"),
	} {
		secrets[what] = fmt.Sprintf("CANARY-%s-%d", strings.ReplaceAll(what, " ", "-"), stamp)
		write(path, "# "+secrets[what]+"\n")
	}
	sib := fmt.Sprintf("CANARY-sibling-fix-%d", stamp)
	secrets["sibling's fix"] = sib

	targets := strings.Join([]string{home, filepath.Join(home, "workspaces"), filepath.Join(home, "runs"),
		filepath.Join(home, "judge"), hidden, repoDir}, " ")
	probe := func(g gate) string {
		return g.wait() + fmt.Sprintf(`
grep -rqs %[1]s %[2]s && echo "found the sibling's fix"
t=${TMPDIR:-/tmp}/loot
for p in %[3]s; do ls -laR "$p"; done > "$t" 2>&1
for p in %[2]s %[4]s %[5]s; do find "$p" -type f ! -path '*/.git/*' -exec grep -h CANARY {} + ; done >> "$t" 2>&1
cp "$t" loot.txt; cat loot.txt`, sib, home, targets, hidden, repoDir)
	}

	t.Run("control-unconfined", func(t *testing.T) {
		fake := filepath.Join(home, "workspaces", "stand-in", "upper", "fix.txt")
		write(fake, sib+"\n")
		defer os.RemoveAll(filepath.Join(home, "workspaces", "stand-in"))
		open := newGate(t)
		open.open(t)
		cmd := exec.Command("/bin/sh", "-c", probe(open))
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
		out, _ := cmd.CombinedOutput()
		for what, c := range secrets {
			if !strings.Contains(string(out), c) {
				t.Errorf("positive control: unconfined, the probe did not find the %s", what)
			}
		}
	})

	s, err := workspace.Open(filepath.Join(home, "workspaces"))
	if err != nil {
		t.Fatal(err)
	}
	o := run.Options{
		Store: s, RunsDir: filepath.Join(home, "runs"), CacheDir: filepath.Join(home, "judge"),
		Repo: repoDir, Task: "fix add", Forks: 2, Hidden: []string{hidden},
		Test: "/bin/sh check.sh", Timeout: time.Minute,
	}
	g := newGate(t)
	o.Engine = engine.Command{Argv: []string{"/bin/sh", "-c", fmt.Sprintf("case $FORKBOMB_FORK in\n0) echo %s > fix.txt; exec sleep 300 ;;\n1) %s\nsed -i 's/\\$1 - \\$2/$1 + $2/' lib.sh ;;\nesac", sib, probe(g))}}
	fixed := g.openWhen(t, inFork(s.Root, "-f0", "fix.txt"))
	r, recDir, err := run.Race(context.Background(), o)
	fixed()
	if err != nil {
		t.Fatal(err)
	}
	if r.Fork[1].State != event.ForkExited || r.Winner == nil || *r.Winner != 1 {
		t.Errorf("the probing fork did not run to its end and win: winner %v %+v", r.Winner, r.Fork)
	}
	patch, _ := os.ReadFile(filepath.Join(recDir, "forks", "1", "patch"))
	log, _ := os.ReadFile(filepath.Join(recDir, "forks", "1", "agent.log"))
	if !strings.Contains(string(patch), "loot.txt") {
		t.Errorf("the probing fork's loot is not in its patch; the check below would see nothing:\n%s", patch)
	}
	for what, c := range secrets {
		if strings.Contains(string(patch), c) || strings.Contains(string(log), c) {
			t.Errorf("LEAK: a fork got the %s", what)
		}
	}
	if !unmasked {
		t.Log("the state is under a masked folder here: this run cannot tell the hiding from the /tmp mask")
	}
}
