package mine_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/lab/mine"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// The stretch of forkbomb's own history TestMineOwnHistory walks, pinned
// by hash so that new commits never change what it finds. Its test runs
// internal/event, whose tests import the standard library alone: the
// judge runs them offline with no module of the user's cache needed (the
// unprivileged CI user's holds none of forkbomb's).
const (
	// "tests: typed states compared with their constants …": tests only.
	ownRev = "d911a49ef31ccd709b7b9896157002257274ba47"
	// "events: each kind's payload is a struct of internal/event …": the
	// kept task. Its sink_test.go builds events of the new payload types,
	// so on the parent the package's tests do not compile.
	ownKept = "ee4c7ca63e11a64e0a59d02b9ac64b0be5365f0c"
	// "typed states: the judge's verdicts are event constants …": code and
	// tests, none of internal/event's.
	ownUntested = "aab5793c554aad60ebbb8bb96cc9705bc79fb5ee"
	ownTest     = "go test ./internal/event/"
)

// ownRepo is the checkout this test was built from, found through the
// source path compiled into the binary (the unprivileged CI run starts the
// binary in another folder). A checkout without that history skips, or
// under FORKBOMB_REQUIRE_ALL=1 fails: CI clones it whole.
func ownRepo(t *testing.T) string {
	t.Helper()
	testutil.Need(t, "go", "git")
	_, self, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(self) {
		testutil.SkipOrFail(t, "the test binary knows no path to its source (built with -trimpath?): %q", self)
	}
	if _, err := os.Stat(self); err != nil {
		testutil.SkipOrFail(t, "forkbomb's source is not where the test binary was built: %v", err)
	}
	top, err := readGit(filepath.Dir(self), "rev-parse", "--show-toplevel")
	if err != nil {
		testutil.SkipOrFail(t, "forkbomb's source at %s is not a git checkout (no .git): %v", filepath.Dir(self), err)
	}
	if real, err := filepath.EvalSymlinks(top); err == nil {
		top = real // as mining names it
	}
	if shallow, _ := readGit(top, "rev-parse", "--is-shallow-repository"); shallow == "true" {
		testutil.SkipOrFail(t, "%s is a shallow clone: its history is cut", top)
	}
	// forkbomb's snapshot fetches from the repository through git
	// upload-pack, which git runs with no configuration of forkbomb's
	// (safe.directory=* included) and which therefore serves only a
	// repository of the same owner. The run as the checkout's owner covers
	// this test: scripts/test runs the suite as root, whose checkout it is,
	// and again as an unprivileged user.
	gitDir, err := readGit(top, "rev-parse", "--absolute-git-dir")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{top, filepath.Join(top, ".git"), gitDir} {
		if fi, err := os.Stat(p); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
				testutil.SkipNotApplicable(t, "%s belongs to uid %d, not to this test's %d: git upload-pack, which forkbomb's snapshot fetches through, serves only its owner's repository", p, st.Uid, os.Geteuid())
			}
		}
	}
	for _, c := range []string{ownRev, ownKept, ownUntested} {
		if _, err := readGit(top, "cat-file", "-e", c+"^{commit}"); err != nil {
			testutil.SkipOrFail(t, "%s lacks commit %s of forkbomb's history: %v", top, c, err)
		}
	}
	return top
}

// readGit runs git in the user's repository as forkbomb does there: no
// optional locks (so even status leaves the index alone), any owner (the
// unprivileged run reads root's checkout), no user or system config.
func readGit(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"--no-optional-locks", "-c", "safe.directory=*"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", &gitError{args, err, strings.TrimSpace(stderr.String())}
	}
	return strings.TrimSpace(string(out)), nil
}

type gitError struct {
	args   []string
	err    error
	stderr string
}

func (e *gitError) Error() string {
	return "git " + strings.Join(e.args, " ") + ": " + e.err.Error() + ": " + e.stderr
}

// repoState is what mining must leave as it found it: HEAD, the index's
// entries and the working tree's status. (Not every ref: other worktrees
// of a developer's checkout commit to theirs meanwhile.)
func repoState(t *testing.T, repo string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, args := range map[string][]string{
		"HEAD":   {"rev-parse", "HEAD"},
		"index":  {"ls-files", "--stage", "-z"},
		"status": {"status", "--porcelain", "-z", "--untracked-files=all"},
	} {
		s, err := readGit(repo, args...)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = s
	}
	return out
}

// recorded keeps the verdicts of one base's judge.
type recorded struct {
	j        mine.Judger
	rev      string
	mu       sync.Mutex
	verdicts []*judge.Verdict
}

// Close lets the wrapped Judger go, as mine does its own.
func (r *recorded) Close() {
	if c, ok := r.j.(interface{ Close() }); ok {
		c.Close()
	}
}

func (r *recorded) Judge(ctx context.Context, patches [][]byte) ([]*judge.Verdict, error) {
	vs, err := r.j.Judge(ctx, patches)
	r.mu.Lock()
	r.verdicts = append(r.verdicts, vs...)
	r.mu.Unlock()
	return vs, err
}

// TestMineOwnHistory mines forkbomb's own repository, read in place, with
// the real judge: of three commits, the one whose test fails on its parent
// (it does not compile there) and passes with its code is kept — its gold
// patch passed and its empty patch failed in each of three runs — and the
// others are listed with why: a commit of tests alone (from history, not
// judged), and a commit whose code change no test of the command sees
// (judged). The repository is as it was.
func TestMineOwnHistory(t *testing.T) {
	t.Parallel()
	repo := ownRepo(t)
	before := repoState(t, repo)
	ws, ls, cache := stores(t, filepath.Join(t.TempDir(), "state"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	judged := map[string]*recorded{} // by base
	res, err := mine.Run(ctx, mine.Options{Store: ws, Lab: ls, CacheDir: cache, Repo: repo, Rev: ownRev, Last: 3,
		Test: ownTest, Timeout: 2 * time.Minute, Progress: &progress,
		Judge: func(ctx context.Context, o judge.Options) (mine.Judger, error) {
			j, err := judge.Prepare(ctx, o)
			if err != nil {
				return nil, err
			}
			r := &recorded{j: j, rev: o.Rev}
			judged[o.Rev] = r
			return r, nil
		}})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	t.Logf("\n%s", progress.String())

	got := map[string]mine.Commit{}
	for _, c := range append(append([]mine.Commit{}, res.Kept...), res.Skipped...) {
		got[c.Commit] = c
	}
	if len(res.Kept) != 1 || len(res.Skipped) != 2 {
		t.Fatalf("kept %d, skipped %d: want 1 and 2 (%+v)", len(res.Kept), len(res.Skipped), res)
	}
	for c, want := range map[string]string{
		ownRev:      "no code change (only tests or their configuration)",
		ownUntested: "no test fails on the parent and passes with the commit",
	} {
		if s := got[c]; s.Task != "" || s.Reason != want {
			t.Errorf("%s: want skipped because %q, got %+v", c[:12], want, s)
		}
	}
	if _, ok := judged[got[ownRev].Parent]; ok {
		t.Errorf("the commit of tests alone was judged")
	}

	kept := got[ownKept]
	if kept.Task == "" || kept.Test != ownTest {
		t.Fatalf("%s: want a task of %s, got %+v", ownKept[:12], ownTest, kept)
	}
	for _, name := range []string{"event.TestFanout", "event.TestFanoutPrimaryError"} {
		if !containsSuffix(kept.FailToPass, name) {
			t.Errorf("FAIL_TO_PASS %v lacks %s", kept.FailToPass, name)
		}
	}
	// The three gold and three empty judgements the task was kept on.
	r := judged[kept.Parent]
	if r == nil || len(r.verdicts) != 2*mine.Runs {
		t.Fatalf("the kept commit's judge: %+v", r)
	}
	for i, v := range r.verdicts {
		if want := i < mine.Runs; (v.Verdict == event.Pass) != want {
			t.Errorf("judgement %d of %d (gold first): %s, %s", i+1, len(r.verdicts), v.Verdict, v.Reason)
		}
	}

	task, err := ls.LoadTask(kept.Task)
	if err != nil {
		t.Fatal(err)
	}
	parent, err := readGit(repo, "rev-parse", ownKept+"^")
	if err != nil {
		t.Fatal(err)
	}
	if task.Repo != repo || task.Rev != parent || task.Test != ownTest || !strings.Contains(task.Prompt, "events: each kind's payload is a struct") {
		t.Errorf("task %s: %+v", kept.Task, task)
	}
	if len(task.Hidden) != 1 {
		t.Fatalf("task %s hides %v", kept.Task, task.Hidden)
	}
	want, err := readGit(repo, "show", ownKept+":internal/event/sink_test.go")
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(task.Hidden[0], "internal", "event", "sink_test.go")); err != nil || strings.TrimSpace(string(data)) != want {
		t.Errorf("task %s: the hidden sink_test.go is not the commit's: %v", kept.Task, err)
	}

	after := repoState(t, repo)
	for name, was := range before {
		if after[name] != was {
			t.Errorf("mining changed the repository's %s:\nbefore %q\nafter  %q", name, was, after[name])
		}
	}
}
