package judge_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestJudgedAtTheRepository: what the code under test can read of where it
// runs is what the user's own run of the tests shows it. The judged copy is
// seen at the repository's own path, and the machine keeps its name (the
// one /etc/hostname gives): a fix gated on either holds, or fails, in both
// alike (TestJudgeThirdPartyGo tries both on go-cmp). Where a folder the
// run is shown lies inside the repository (a --hidden folder), the copy is
// seen at a folder of the judge's own instead: mounted inside the copy, the
// folder would become part of the tree tested.
func TestJudgedAtTheRepository(t *testing.T) {
	t.Parallel()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(t.TempDir(), "repo")
	probe := "echo \"wd=$(pwd -P)\"\necho \"host=$(hostname)\"\nfor f in *; do echo \"entry=$f\"; done\necho '1 passed, 0 failed'\n"
	writeFiles(t, repo, map[string]string{"probe.sh": probe, "README": "base\n"})
	testutil.Git(t, repo, "init", "-q")
	testutil.Git(t, repo, "add", "-A")
	testutil.Git(t, repo, "commit", "-qm", "base")
	top, err := filepath.EvalSymlinks(repo)
	if err != nil {
		t.Fatal(err)
	}
	// not committed: a folder of hidden tests kept beside the code
	hidden := filepath.Join(repo, "hidden")
	writeFiles(t, hidden, map[string]string{"hidden_check.txt": "hidden\n"})
	patch := makePatch(t, repo, map[string]edit{"README": {content: "changed\n"}})

	for _, c := range []struct {
		name   string
		hidden []string
		atRepo bool
	}{
		{name: "at the repository", atRepo: true},
		{name: "a hidden folder inside it", hidden: []string{hidden}},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			s, err := workspace.Open(filepath.Join(home, "workspaces"))
			if err != nil {
				t.Fatal(err)
			}
			o := judge.Options{Store: s, CacheDir: filepath.Join(home, "judge"), Repo: repo, Test: "/bin/sh probe.sh", Hidden: c.hidden}
			verdicts, err := judge.Judge(context.Background(), o, [][]byte{patch})
			if err != nil {
				t.Fatalf("judge: %v", err)
			}
			out := verdicts[0].Output
			if !strings.Contains(out, "entry=probe.sh\n") {
				t.Fatalf("the probe did not run in the judged copy:\n%s", out)
			}
			if !strings.Contains(out, "host="+host+"\n") {
				t.Errorf("the judged run does not see the machine's name %q:\n%s", host, out)
			}
			wd := "wd=" + top + "\n"
			if c.atRepo != strings.Contains(out, wd) {
				t.Errorf("judged at the repository's own path (%s): %v, want %v:\n%s", top, !c.atRepo, c.atRepo, out)
			}
			if !c.atRepo {
				if !strings.Contains(out, "entry=hidden_check.txt\n") {
					t.Errorf("the hidden test was not copied in:\n%s", out)
				}
				if strings.Contains(out, "entry=hidden\n") {
					t.Errorf("the hidden folder became part of the judged tree:\n%s", out)
				}
			}
		})
	}
}
