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
// seen at the repository's own path, and the machine keeps its name: a fix
// gated on either holds, or fails, in both alike (TestJudgeThirdPartyGo
// tries both on go-cmp). The repository itself is neither written nor read
// (the run writes in its copy, and finds none of the repository's
// uncommitted files), and a PATH entry inside it — a user's `bin/` or
// `node_modules/.bin` — is dropped: there it would name the patch's own
// programs. A --hidden folder inside the repository is copied out first:
// shown at its own path, inside the copy, it would become part of the tree
// tested (TestJudgedAtFallsBack: the folders that are not copied).
//
// Not parallel: it sets PATH for the judge.
func TestJudgedAtTheRepository(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(t.TempDir(), "repo")
	probe := `echo "wd=$(pwd -P)"
echo "host=$(hostname)"
for f in *; do echo "entry=$f"; done
for f in /tmp/*; do echo "tmp=$f"; done
echo "evil=$(command -v evil)"
echo changed-by-the-run > README
echo x > written-by-the-run
echo '1 passed, 0 failed'
`
	writeFiles(t, repo, map[string]string{"probe.sh": probe, "README": "base\n"})
	testutil.Git(t, repo, "init", "-q")
	testutil.Git(t, repo, "add", "-A")
	testutil.Git(t, repo, "commit", "-qm", "base")
	top, err := filepath.EvalSymlinks(repo)
	if err != nil {
		t.Fatal(err)
	}
	// not committed: a folder of hidden tests kept beside the code, and a
	// file of the user's
	hidden := filepath.Join(repo, "hidden")
	writeFiles(t, hidden, map[string]string{"hidden_check.txt": "hidden\n"})
	writeFiles(t, repo, map[string]string{"uncommitted": "mine\n"})
	// the patch brings a program of its own into the user's bin/, which
	// is on the PATH
	patch := makePatch(t, repo, map[string]edit{"README": {content: "changed\n"}, "bin/evil": {content: "#!/bin/sh\necho evil\n", mode: 0o755}})
	if !strings.Contains(string(patch), "new file mode 100755") {
		t.Fatalf("the patch's program is not executable:\n%s", patch)
	}
	t.Setenv("PATH", filepath.Join(top, "bin")+string(filepath.ListSeparator)+os.Getenv("PATH"))

	for _, c := range []struct {
		name   string
		hidden []string
		atRepo bool
	}{
		{name: "at the repository", atRepo: true},
		{name: "a hidden folder inside it", hidden: []string{hidden}, atRepo: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			s, err := workspace.Open(filepath.Join(home, "workspaces"))
			if err != nil {
				t.Fatal(err)
			}
			if c.atRepo {
				needOverlayForks(t, s, repo)
			}
			o := judge.Options{Store: s, CacheDir: filepath.Join(home, "judge"), Repo: repo, Test: "/bin/sh probe.sh", Hidden: c.hidden}
			verdicts, err := judge.Judge(context.Background(), o, [][]byte{patch})
			if err != nil {
				t.Fatalf("judge: %v", err)
			}
			out := verdicts[0].Output
			if !strings.Contains(out, "entry=probe.sh\n") || !strings.Contains(out, "entry=bin\n") {
				t.Fatalf("the probe did not run in the patched copy:\n%s", out)
			}
			if !strings.Contains(out, "host="+host+"\n") {
				t.Errorf("the judged run does not see the machine's name %q:\n%s", host, out)
			}
			if !strings.Contains(out, "evil=\n") {
				t.Errorf("the patch's program was found on the PATH:\n%s", out)
			}
			if strings.Contains(out, "entry=uncommitted\n") {
				t.Errorf("the judged run sees the repository's uncommitted file:\n%s", out)
			}
			if c.atRepo != strings.Contains(out, "wd="+top+"\n") {
				t.Errorf("judged at the repository's own path (%s): %v, want %v:\n%s", top, !c.atRepo, c.atRepo, out)
			}
			if c.hidden != nil {
				if !strings.Contains(out, "entry=hidden_check.txt\n") {
					t.Errorf("the hidden test was not copied in:\n%s", out)
				}
				if strings.Contains(out, "entry=hidden\n") {
					t.Errorf("the hidden folder became part of the judged tree:\n%s", out)
				}
			}
			// checked from outside: the repository is as it was
			if b, err := os.ReadFile(filepath.Join(repo, "README")); err != nil || string(b) != "base\n" {
				t.Errorf("the repository's README: %q %v", b, err)
			}
			for _, f := range []string{"written-by-the-run", "bin", "hidden_check.txt"} {
				if _, err := os.Lstat(filepath.Join(repo, f)); err == nil {
					t.Errorf("%s appeared in the repository", f)
				}
			}
			// the judge's own files (the patch, the hidden tests' copies)
			// live in its cache folder, hidden from every fork, not in
			// a temp folder, which a TMPDIR outside /tmp leaves unmasked
			if strings.Contains(out, "tmp=/tmp/forkbomb-") {
				t.Errorf("the judge's files are in the temp folder:\n%s", out)
			}
			if left, _ := os.ReadDir(filepath.Join(home, "judge", "tmp")); len(left) > 0 {
				t.Errorf("the judge's files were left: %v", left)
			}
		})
	}
}

// needOverlayForks skips (or fails, FORKBOMB_REQUIRE_ALL) where the store
// forks by copy: a copied fork is judged at its own path.
func needOverlayForks(t *testing.T, s *workspace.Store, repo string) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.New(ctx, "overlay-probe", workspace.NewOptions{Repo: repo}); err != nil {
		t.Fatal(err)
	}
	m, err := s.Fork(ctx, "overlay-probe", "overlay-probe-fork")
	if err != nil {
		t.Fatal(err)
	}
	if m.Method != workspace.MethodOverlay {
		testutil.SkipOrFail(t, "forks here are %s copies, not overlays: a copy is judged at its own path", m.Method)
	}
}
