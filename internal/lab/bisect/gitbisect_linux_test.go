package bisect_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/lab/bisect"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// The test every commit gets: untestable where a "skip" file exists, bad
// once v reaches the threshold.
func testCmd(threshold int) string {
	return fmt.Sprintf(`if [ -e skip ]; then exit 125; fi; [ "$(cat v)" -lt %d ]`, threshold)
}

// genRepo makes a linear history of n commits after the root ("good"):
// commit i writes i to v, and holds a "skip" file when skip[i].
func genRepo(t *testing.T, n int, skip map[int]bool) (dir string, commits []string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "repo")
	os.MkdirAll(dir, 0o755)
	testutil.Git(t, dir, "init", "-q")
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("v", "0\n")
	write("README", "generated\n")
	testutil.Git(t, dir, "add", "-A")
	testutil.Git(t, dir, "commit", "-qm", "root")
	testutil.Git(t, dir, "tag", "good")
	for i := 1; i <= n; i++ {
		write("v", fmt.Sprintf("%d\n", i))
		os.Remove(filepath.Join(dir, "skip"))
		if skip[i] {
			write("skip", "untestable\n")
		}
		testutil.Git(t, dir, "add", "-A")
		testutil.Git(t, dir, "commit", "-qm", fmt.Sprintf("commit %d", i))
		commits = append(commits, testutil.Git(t, dir, "rev-parse", "HEAD"))
	}
	return dir, commits
}

var (
	firstBadRE = regexp.MustCompile(`(?m)^([0-9a-f]{40}) is the first bad commit`)
	anyOfRE    = regexp.MustCompile(`(?s)could be any of:\n(.*?)\nWe cannot bisect more`)
)

// gitBisect runs `git bisect run` in a clone and returns its candidates.
func gitBisect(t *testing.T, repo, test string) []string {
	t.Helper()
	clone := filepath.Join(t.TempDir(), "clone")
	testutil.Git(t, filepath.Dir(clone), "clone", "-q", repo, clone)
	testutil.Git(t, clone, "bisect", "start", "HEAD", "good")
	cmd := exec.Command("git", "bisect", "run", "sh", "-c", test)
	cmd.Dir = clone
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "LC_ALL=C")
	out, _ := cmd.CombinedOutput()
	if m := firstBadRE.FindSubmatch(out); m != nil {
		return []string{string(m[1])}
	}
	if m := anyOfRE.FindSubmatch(out); m != nil {
		l := strings.Fields(string(m[1]))
		slices.Sort(l)
		return l
	}
	t.Fatalf("git bisect run said neither:\n%s", out)
	return nil
}

// gitState hashes everything under .git and the worktree's status: a
// bisect must leave the user's repository exactly as it was.
func gitState(t *testing.T, repo string) string {
	t.Helper()
	h := sha256.New()
	filepath.WalkDir(filepath.Join(repo, ".git"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		fmt.Fprintf(h, "%s %x\n", p, sha256.Sum256(b))
		return nil
	})
	fmt.Fprintln(h, testutil.Git(t, repo, "status", "--porcelain", "--ignored"))
	return fmt.Sprintf("%x", h.Sum(nil))
}

func newStore(t *testing.T) *workspace.Store {
	t.Helper()
	s, err := workspace.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	testutil.OpenOverlayWork(t, s.Root)
	return s
}

func TestBisectMatchesGitBisectRun(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "git")
	cases := []struct {
		name      string
		n         int
		threshold int
		skip      map[int]bool
	}{
		{"plain", 20, 12, nil},
		{"first commit bad", 20, 1, nil},
		{"only bad is bad", 20, 20, nil},
		{"skips away from the answer", 20, 12, map[int]bool{3: true, 7: true, 16: true}},
		{"skips next to the answer", 20, 12, map[int]bool{10: true, 11: true}},
		{"skipped first bad", 20, 12, map[int]bool{12: true, 13: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case has its own repository, clone and store
			repo, _ := genRepo(t, tc.n, tc.skip)
			test := testCmd(tc.threshold)
			want := gitBisect(t, repo, test)

			// The user is in the middle of a bisect of their own: it must
			// survive ours untouched.
			testutil.Git(t, repo, "bisect", "start", "HEAD", "HEAD~3")
			before := gitState(t, repo)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			store := newStore(t)
			res, err := bisect.Run(ctx, bisect.Options{
				Store: store, Repo: repo, Good: "good", Bad: "main", Test: test, Forks: 3,
				Policy: sandbox.Policy{Timeout: time.Minute},
			})
			if err != nil {
				t.Fatal(err)
			}
			noneLeft(t, store)
			got := slices.Clone(res.Candidates)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("forkbomb bisect: %v\ngit bisect run: %v\ntested: %+v", got, want, res.Tested)
			}
			if len(want) == 1 && res.FirstBad != want[0] {
				t.Errorf("first bad %q, want %q", res.FirstBad, want[0])
			}
			if after := gitState(t, repo); after != before {
				t.Error("the user's repository changed")
			}
		})
	}
}

// The snapshot holds the range's history only: good and what follows it up
// to bad, not the commits before good. Every test passes only there, so
// the first bad commit is bad itself; with the whole history copied, every
// test fails and the answer is the commit after good.
func TestBisectSnapshotIsTheRange(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "git")
	repo, commits := genRepo(t, 30, nil)
	root := testutil.Git(t, repo, "rev-list", "--max-parents=0", "HEAD")
	good := commits[9] // commit 10: the range is commits 11 to 30
	test := fmt.Sprintf(`[ "$(git rev-list --count HEAD)" -eq 21 ] && ! git cat-file -e %s 2>/dev/null`, root)
	store := newStore(t)
	res, err := bisect.Run(context.Background(), bisect.Options{
		Store: store, Repo: repo, Good: good, Bad: "main", Test: test, Forks: 3,
		Policy: sandbox.Policy{Timeout: time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Commits != 20 || res.FirstBad != commits[29] {
		t.Errorf("%d commits, first bad %s; want 20 and bad (%s): the snapshot is not the range", res.Commits, res.FirstBad, commits[29])
	}
	noneLeft(t, store)
}

// noneLeft fails unless the store holds no workspace: a bisect removes its
// snapshot and every fork it made, those started ahead and not needed too.
func noneLeft(t *testing.T, s *workspace.Store) {
	t.Helper()
	l, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range l {
		t.Errorf("left in the store: %s", m.Name)
	}
}

// A test's time limit runs from the moment the test begins, not from its
// sandbox's start: a sandbox started ahead waits about one round for its
// commit (here 8 s), and its test takes 8 s more, so a limit of 12 s from
// the start would stop every such test (the 4 s left past the sleep are
// for a loaded machine's shell and teardown). A test that does outrun the limit
// stops the bisect (git bisect run has no limit).
func TestBisectTimeLimit(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "git")
	repo, commits := genRepo(t, 12, nil)
	t.Run("from when the test begins", func(t *testing.T) {
		t.Parallel()
		store := newStore(t)
		res, err := bisect.Run(context.Background(), bisect.Options{
			// Only bad is bad: the tests in sandboxes started ahead pass.
			Store: store, Repo: repo, Good: "good", Bad: "main", Test: "sleep 8; " + testCmd(12), Forks: 2,
			Policy: sandbox.Policy{Timeout: 12 * time.Second},
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.FirstBad != commits[11] {
			t.Errorf("first bad %s, want %s (commit 12)", res.FirstBad, commits[11])
		}
		if res.Ahead == 0 {
			t.Errorf("no test ran in a sandbox started ahead (%d rounds): the limit was not put to the test", res.Rounds)
		}
		noneLeft(t, store)
	})
	t.Run("while the tree is made", func(t *testing.T) {
		t.Parallel()
		// bad's tree holds a git that never returns, and a relative PATH
		// entry finds it from the fork's root: the script's read-tree
		// hangs before the test begins, and the limit must stop it.
		hung := filepath.Join(t.TempDir(), "repo")
		testutil.Git(t, filepath.Dir(hung), "clone", "-q", repo, hung)
		if err := os.MkdirAll(filepath.Join(hung, "hang"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(hung, "hang", "git"), []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		testutil.Git(t, hung, "add", "-A")
		testutil.Git(t, hung, "-c", "user.name=t", "-c", "user.email=t@l", "commit", "-qm", "a git that hangs")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		store := newStore(t)
		_, err := bisect.Run(ctx, bisect.Options{
			Store: store, Repo: hung, Good: "good", Bad: "HEAD", Test: "true", Forks: 2,
			Policy: sandbox.Policy{Timeout: 3 * time.Second, SetEnv: []string{"PATH=hang:/usr/bin:/bin"}},
		})
		if !errors.Is(err, bisect.ErrAborted) || !strings.Contains(err.Error(), "timed out") {
			t.Fatalf("got %v, want %v: ... timed out", err, bisect.ErrAborted)
		}
		noneLeft(t, store)
	})
	t.Run("outrun", func(t *testing.T) {
		t.Parallel()
		store := newStore(t)
		_, err := bisect.Run(context.Background(), bisect.Options{
			Store: store, Repo: repo, Good: "good", Bad: "main", Test: "sleep 60", Forks: 2,
			Policy: sandbox.Policy{Timeout: 2 * time.Second},
		})
		if !errors.Is(err, bisect.ErrAborted) || !strings.Contains(err.Error(), "timed out") {
			t.Fatalf("got %v, want %v: ... timed out", err, bisect.ErrAborted)
		}
		noneLeft(t, store)
	})
}

// Every tested commit's tree is the commit's own, whichever way the forks
// are made: files added, deleted, rewritten, made executable, a symlink
// moved, a folder turned into a file and back. Commit i's test checks its
// tree's shape and exits 200 and up (which stops the bisect) where it is
// not i's; the first bad commit is found as well.
func TestBisectTrees(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "git")
	dir := filepath.Join(t.TempDir(), "repo")
	os.MkdirAll(dir, 0o755)
	testutil.Git(t, dir, "init", "-q")
	var commits []string
	for i := 0; i <= 16; i++ {
		os.RemoveAll(filepath.Join(dir, "d"))
		os.Remove(filepath.Join(dir, "l"))
		if i > 0 {
			os.Remove(filepath.Join(dir, fmt.Sprintf("n%d", i-1)))
		}
		files := map[string]string{"v": fmt.Sprintf("%d\n", i), fmt.Sprintf("n%d", i): fmt.Sprintf("%d\n", i), "x": "#!/bin/sh\n"}
		if i%2 == 1 {
			files["d"] = "a file\n"
		} else {
			os.Mkdir(filepath.Join(dir, "d"), 0o755)
			files["d/f"] = "a folder's file\n"
		}
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		os.Chmod(filepath.Join(dir, "x"), map[bool]os.FileMode{true: 0o755, false: 0o644}[i%2 == 1])
		if err := os.Symlink(fmt.Sprintf("n%d", i), filepath.Join(dir, "l")); err != nil {
			t.Fatal(err)
		}
		testutil.Git(t, dir, "add", "-A")
		testutil.Git(t, dir, "commit", "-qm", fmt.Sprintf("commit %d", i))
		if i == 0 {
			testutil.Git(t, dir, "tag", "good")
		} else {
			commits = append(commits, testutil.Git(t, dir, "rev-parse", "HEAD"))
		}
	}
	test := `i=$(cat v)
[ "$(cat n$i)" = "$i" ] || exit 200
[ ! -e n$((i-1)) ] || exit 201
[ "$(readlink l)" = "n$i" ] || exit 202
if [ $((i % 2)) = 1 ]; then [ -x x ] && [ -f d ] || exit 203; else [ ! -x x ] && [ -f d/f ] || exit 204; fi
[ "$(ls | wc -l)" = 5 ] || exit 205
[ "$i" -lt 11 ]`
	for _, method := range []workspace.Method{workspace.MethodOverlay, workspace.MethodCopy} {
		t.Run(string(method), func(t *testing.T) {
			t.Parallel()
			store := newStore(t)
			store.ForkMethod = method
			res, err := bisect.Run(context.Background(), bisect.Options{
				Store: store, Repo: dir, Good: "good", Bad: "HEAD", Test: test, Forks: 3,
				Policy: sandbox.Policy{Timeout: time.Minute},
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.FirstBad != commits[10] {
				t.Errorf("first bad %s, want %s (commit 11); tested %+v", res.FirstBad, commits[10], res.Tested)
			}
			if len(res.Tested) < 6 {
				t.Errorf("only %d commits tested", len(res.Tested))
			}
			noneLeft(t, store)
		})
	}
}

// A commit whose tree cannot be made stops the bisect and says so; an
// interrupted bisect returns at once with the interruption. Neither leaves
// a workspace behind.
func TestBisectStops(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "git")
	repo, _ := genRepo(t, 12, nil)
	t.Run("no tree", func(t *testing.T) {
		t.Parallel()
		store := newStore(t)
		// git, sent elsewhere, finds no repository to make the tree from.
		_, err := bisect.Run(context.Background(), bisect.Options{
			Store: store, Repo: repo, Good: "good", Bad: "main", Test: "true", Forks: 2,
			Policy: sandbox.Policy{Timeout: time.Minute, SetEnv: []string{"GIT_DIR=/nonexistent"}},
		})
		if !errors.Is(err, bisect.ErrTree) || !strings.Contains(err.Error(), "not a git repository") {
			t.Fatalf("got %v, want %v with git's own reason", err, bisect.ErrTree)
		}
		noneLeft(t, store)
	})
	// good and bad are resolved at once, then the range listed, while the
	// probe of how forks are made runs: whatever fails, good's error is
	// said first.
	for _, c := range []struct{ good, bad, want string }{
		{"nope", "main", `good "nope"`},
		{"good", "nope", `bad "nope"`},
		{"nope", "nope2", `good "nope"`},
		{"main", "good", "not an ancestor"},
		{"main", "main", bisect.ErrEmptyRange.Error()},
	} {
		t.Run(c.good+".."+c.bad, func(t *testing.T) {
			t.Parallel()
			store := newStore(t)
			_, err := bisect.Run(context.Background(), bisect.Options{
				Store: store, Repo: repo, Good: c.good, Bad: c.bad, Test: "true", Forks: 2,
				Policy: sandbox.Policy{Timeout: time.Minute},
			})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error saying %q", err, c.want)
			}
			noneLeft(t, store)
		})
	}
	// The range is listed, then the snapshot fails (the store is inside
	// the repository): it says so, and leaves nothing.
	t.Run("no snapshot", func(t *testing.T) {
		t.Parallel()
		repo, _ := genRepo(t, 4, nil)
		store, err := workspace.Open(filepath.Join(repo, "state"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = bisect.Run(context.Background(), bisect.Options{
			Store: store, Repo: repo, Good: "good", Bad: "main", Test: "true", Forks: 2,
			Policy: sandbox.Policy{Timeout: time.Minute},
		})
		if !errors.Is(err, workspace.ErrStateInRepo) || !strings.Contains(err.Error(), "snapshot main") {
			t.Fatalf("got %v, want the snapshot's %v", err, workspace.ErrStateInRepo)
		}
		noneLeft(t, store)
	})
	t.Run("interrupted", func(t *testing.T) {
		t.Parallel()
		store := newStore(t)
		// Most likely while the first round's tests sleep; on a loaded
		// machine perhaps still in the snapshot: either must stop.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(3*time.Second, cancel)
		_, err := bisect.Run(ctx, bisect.Options{
			Store: store, Repo: repo, Good: "good", Bad: "main", Test: "sleep 120", Forks: 2,
			Policy:   sandbox.Policy{Timeout: 5 * time.Minute},
			Progress: func(bisect.Progress) { t.Error("a round ended") },
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want %v", err, context.Canceled)
		}
		noneLeft(t, store)
	})
}
