package judge_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestJudgeSeesOnlyItsCopy: with FORKBOMB_HOME (workspaces, baselines,
// runs), the hidden tests and the repository outside the folders the
// sandbox masks anyway (under /srv), the code under test — here the test
// command itself — lists and reads the baselines, another run, another
// workspace's layer and the repository's uncommitted file. Checked from
// outside, in the judged run's output: it gets none of them, yet it reads
// the hidden test the judge copied in. Control: the same probe, unconfined,
// gets every canary.
func TestJudgeSeesOnlyItsCopy(t *testing.T) {
	t.Parallel()
	base, unmasked := testutil.OutsideDir(t)
	home, hidden, repo := filepath.Join(base, "home"), filepath.Join(base, "hidden"), filepath.Join(base, "repo")
	stamp := time.Now().UnixNano()
	hiddenCanary := fmt.Sprintf("CANARY-hidden-test-%d", stamp)
	writeFiles(t, hidden, map[string]string{"hidden_check.txt": hiddenCanary + "\n"})
	targets := strings.Join([]string{home, filepath.Join(home, "judge"), filepath.Join(home, "runs"), filepath.Join(home, "workspaces"), repo}, " ")
	probe := fmt.Sprintf(`cat hidden_check.txt
for p in %[1]s; do ls -laR "$p"; done
for p in %[1]s; do find "$p" -type f ! -path '*/.git/*' -exec grep -h CANARY {} +; done
echo '1 passed, 0 failed'
`, targets)
	writeFiles(t, repo, map[string]string{"probe.sh": probe, "README": "base\n"})
	testutil.Git(t, repo, "init", "-q")
	testutil.Git(t, repo, "add", "-A")
	testutil.Git(t, repo, "commit", "-qm", "base")

	s, err := workspace.Open(filepath.Join(home, "workspaces"))
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{}
	for what, path := range map[string]string{
		"judge baseline":      filepath.Join(home, "judge", "bases", "base-0123456789abcdef", "baseline-old.json"),
		"other run":           filepath.Join(home, "runs", "old-run", "winner.patch"),
		"other workspace":     filepath.Join(home, "workspaces", "other", "upper", "fix.txt"),
		"uncommitted file":    filepath.Join(repo, "notes.txt"),
		"state home's others": filepath.Join(home, "lab", "task.toml"),
	} {
		secrets[what] = fmt.Sprintf("CANARY-%s-%d", strings.ReplaceAll(what, " ", "-"), stamp)
		writeFiles(t, filepath.Dir(path), map[string]string{filepath.Base(path): secrets[what] + "\n"})
	}

	t.Run("control-unconfined", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"hidden_check.txt": hiddenCanary + "\n"})
		cmd := exec.Command("/bin/sh", "-c", probe)
		cmd.Dir = dir
		out, _ := cmd.CombinedOutput()
		for what, c := range secrets {
			if !strings.Contains(string(out), c) {
				t.Errorf("positive control: unconfined, the probe did not find the %s", what)
			}
		}
	})

	o := judge.Options{Store: s, CacheDir: filepath.Join(home, "judge"), Repo: repo, Test: "/bin/sh probe.sh",
		Hidden: []string{hidden}, Hide: []string{filepath.Join(home, "runs")}}
	patch := makePatch(t, repo, map[string]edit{"README": {content: "changed\n"}})
	verdicts, err := judge.Judge(context.Background(), o, [][]byte{patch})
	if err != nil {
		t.Fatalf("judge: %v", err)
	}
	out := verdicts[0].Output
	if !strings.Contains(out, hiddenCanary) {
		t.Errorf("the judged run did not see the hidden test it must run:\n%s", tail(out))
	}
	for what, c := range secrets {
		if strings.Contains(out, c) {
			t.Errorf("LEAK: the code under test read the %s", what)
		}
	}
	if !unmasked {
		t.Log("the state is under a masked folder here: this run cannot tell the hiding from the /tmp mask")
	}
}
