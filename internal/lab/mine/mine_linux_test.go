package mine_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/lab"
	"github.com/forkbomb/forkbomb/internal/lab/mine"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// fixture clones a branch of a bundle of testdata into a temp folder
// named after the bundle (nothing is fetched) and returns the repository
// with the stores to mine it into.
func fixture(t *testing.T, bundle, branch string) (repo string, ws *workspace.Store, ls *lab.Store, cache string) {
	t.Helper()
	testutil.Need(t, "go", "git")
	dir := t.TempDir()
	repo = filepath.Join(dir, strings.TrimSuffix(bundle, ".bundle"))
	src, err := filepath.Abs(filepath.Join("testdata", bundle))
	if err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, dir, "clone", "-q", "-b", branch, src, repo)
	ws, ls, cache = stores(t, filepath.Join(dir, "state"))
	return repo, ws, ls, cache
}

// stores opens the workspace store, the lab store and the judge's cache
// folder that mining writes, under state.
func stores(t *testing.T, state string) (*workspace.Store, *lab.Store, string) {
	t.Helper()
	ws, err := workspace.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	testutil.OpenOverlayWork(t, ws.Root)
	return ws, &lab.Store{Dir: filepath.Join(state, "lab")}, filepath.Join(state, "judge")
}

// bySubject indexes a result's commits by subject.
func bySubject(res *mine.Result) map[string]mine.Commit {
	out := map[string]mine.Commit{}
	for _, c := range append(append([]mine.Commit{}, res.Kept...), res.Skipped...) {
		out[c.Subject] = c
	}
	return out
}

// TestMineSemver mines a real history (testdata/semver.sh builds it): two
// commits are tasks — a feature whose test does not compile on its parent
// and a fix whose test fails there — and every other commit is skipped
// with its reason. Each kept task is stored, its hidden tests are the
// commit's test files, and the judge, run again on the stored task, fails
// the empty patch.
func TestMineSemver(t *testing.T) {
	t.Parallel()
	repo, ws, ls, cache := fixture(t, "semver.bundle", "main")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	res, err := mine.Run(ctx, mine.Options{Store: ws, Lab: ls, CacheDir: cache, Repo: repo, Last: 20, Timeout: 2 * time.Minute, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	t.Logf("\n%s", progress.String())
	got := bySubject(res)
	for subject, want := range map[string]string{
		"Fetch the latest release":  "the tests need the network",
		"Merge branch vprefix":      "a merge commit",
		"Test Parse with two parts": "no code change",
		"Document the package":      "no test change",
		"Parse versions":            "the root commit",
	} {
		if c, ok := got[subject]; !ok || c.Task != "" || !strings.Contains(c.Reason, want) {
			t.Errorf("%q: want skipped because %q, got %+v", subject, want, c)
		}
	}
	if len(res.Kept) != 2 || len(res.Skipped) != 5 {
		t.Fatalf("kept %d, skipped %d: want 2 and 5", len(res.Kept), len(res.Skipped))
	}
	// Compare's test does not compile on the parent, so the whole package
	// fails there: TestParse comes to pass with it.
	for subject, want := range map[string][]string{
		"Add Compare": {"semver.TestCompare", "semver.TestParse"},
		"Parse refuses parts that are not numbers": {"semver.TestParseNotANumber"},
	} {
		c := got[subject]
		test := want[0]
		if c.Task == "" || c.Test != "go test ./..." {
			t.Errorf("%q: want a task of go test ./..., got %+v", subject, c)
			continue
		}
		for _, w := range want {
			if !containsSuffix(c.FailToPass, w) {
				t.Errorf("%q: FAIL_TO_PASS %v lacks %s", subject, c.FailToPass, w)
			}
		}
		if subject != "Add Compare" && (len(c.FailToPass) != 1 || c.PassToPass == 0) {
			t.Errorf("%q: FAIL_TO_PASS %v, PASS_TO_PASS %d: want one and some", subject, c.FailToPass, c.PassToPass)
		}
		task, err := ls.LoadTask(c.Task)
		if err != nil {
			t.Fatal(err)
		}
		if task.Rev != c.Parent || task.Repo != repo || !strings.Contains(task.Prompt, subject) || !strings.Contains(task.Prompt, test) {
			t.Errorf("task %s: %+v", c.Task, task)
		}
		if len(task.Hidden) != 1 {
			t.Fatalf("task %s hides %v", c.Task, task.Hidden)
		}
		for _, h := range c.Hidden {
			want := testutil.Git(t, repo, "show", c.Commit+":"+h)
			if data, err := os.ReadFile(filepath.Join(task.Hidden[0], h)); err != nil || strings.TrimSpace(string(data)) != want {
				t.Errorf("task %s: hidden %s is not the commit's: %v", c.Task, h, err)
			}
		}
	}
	// Mined oldest first, the newer kept commit's parent's pid 1 holds the
	// object files of the older one's, the same files (seeded, not fetched
	// again whole).
	top, _, err := workspace.ResolveBase(ctx, repo, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	older := testutil.ObjectFiles(t, filepath.Join(ws.Root, judge.BaseName(top, res.Kept[1].Parent), "tree", ".git"))
	newer := testutil.ObjectFiles(t, filepath.Join(ws.Root, judge.BaseName(top, res.Kept[0].Parent), "tree", ".git"))
	for f, ino := range older {
		if newer[f] != ino {
			t.Errorf("the pid 1 of %s was not seeded from the one of %s: %s is not the same file", res.Kept[0].Parent[:12], res.Kept[1].Parent[:12], f)
		}
	}
	// The stored task, judged as a race would judge it: the empty patch fails.
	task, err := ls.LoadTask(got["Add Compare"].Task)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := judge.Judge(ctx, judge.Options{Store: ws, CacheDir: cache, Repo: task.Repo, Rev: task.Rev, Test: task.Test, Hidden: task.Hidden}, [][]byte{nil})
	if err != nil {
		t.Fatal(err)
	}
	if vs[0].Verdict == event.Pass {
		t.Errorf("the empty patch passes the stored task: %s", vs[0].Reason)
	}
	// Mining again finds the tasks stored and judges only the commit it
	// skipped after judging (the network's).
	judged := 0
	again, err := mine.Run(ctx, mine.Options{Store: ws, Lab: ls, CacheDir: cache, Repo: repo, Last: 20, Judge: func(context.Context, judge.Options) (mine.Judger, error) {
		judged++
		return nil, judge.ErrCannotJudge
	}})
	if err != nil {
		t.Fatal(err)
	}
	if judged != 1 || len(again.Kept) != 0 || !strings.Contains(bySubject(again)["Add Compare"].Reason, "already stored") {
		t.Errorf("second mining judged %d commits: %+v", judged, again)
	}
}

func containsSuffix(list []string, suffix string) bool {
	for _, s := range list {
		if strings.HasSuffix(s, suffix) {
			return true
		}
	}
	return false
}

// scripted is a judge whose verdicts the test chooses: each judged patch
// takes the next outcome of its kind (gold or empty).
type scripted struct {
	gold, empty []bool
	baseline    map[string]judge.Outcome
}

func (s *scripted) Judge(_ context.Context, patches [][]byte) ([]*judge.Verdict, error) {
	var out []*judge.Verdict
	for _, p := range patches {
		next := &s.empty
		if len(p) > 0 {
			next = &s.gold
		}
		pass := (*next)[0]
		*next = (*next)[1:]
		verdict := event.Fail
		if pass {
			verdict = event.Pass
		}
		v := &judge.Verdict{Verdict: verdict, Reason: "scripted", Baseline: &judge.Baseline{Results: &judge.Results{Named: true, Tests: s.baseline}},
			Results: &judge.Results{Named: true, Tests: map[string]judge.Outcome{"TestOld": judge.Passed, "TestNew": judge.Failed}}}
		if pass {
			v.Results.Tests["TestNew"] = judge.Passed
		}
		if len(p) > 0 { // the judge's word on its own verdict, the same each run
			v.Warnings = []string{"sentinel S: the untouched base gets it wrong too; not checked"}
		}
		out = append(out, v)
	}
	return out, nil
}

// TestMineChecksThreeTimes: a commit is a task only when the gold patch
// passes and the empty one fails in every one of three runs; an outcome
// that changes between runs is flaky, and an empty patch that passes
// does not discriminate.
func TestMineChecksThreeTimes(t *testing.T) {
	t.Parallel()
	base := map[string]judge.Outcome{"TestOld": judge.Passed, "TestNew": judge.Failed}
	for _, tc := range []struct {
		name        string
		gold, empty []bool
		want        string
	}{
		{"kept", []bool{true, true, true}, []bool{false, false, false}, ""},
		{"flaky gold", []bool{true, false, true}, []bool{false, false, false}, "flaky: with the commit's code the tests passed in 2 of 3 runs"},
		{"gold fails", []bool{false, false, false}, []bool{false, false, false}, "the commit's own code fails the judge: scripted"},
		{"flaky parent", []bool{true, true, true}, []bool{false, true, false}, "flaky: on the parent the tests the commit fixes passed in 1 of 3 runs"},
		{"empty passes", []bool{true, true, true}, []bool{true, true, true}, "the tests the commit fixes pass on the parent too: the task does not discriminate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo, ws, ls, cache := fixture(t, "semver.bundle", "main")
			res, err := mine.Run(context.Background(), mine.Options{Store: ws, Lab: ls, CacheDir: cache, Repo: repo, Rev: "HEAD~1", Last: 1,
				Judge: func(context.Context, judge.Options) (mine.Judger, error) {
					return &scripted{gold: tc.gold, empty: tc.empty, baseline: base}, nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			c := bySubject(res)["Parse refuses parts that are not numbers"]
			if c.Reason != tc.want || (tc.want == "") != (c.Task != "") {
				t.Errorf("got %+v, want reason %q", c, tc.want)
			}
			if tc.want == "" && (len(c.FailToPass) != 1 || c.FailToPass[0] != "TestNew" || c.PassToPass != 1) {
				t.Errorf("FAIL_TO_PASS %v, PASS_TO_PASS %d", c.FailToPass, c.PassToPass)
			}
			// the gold verdicts' warnings are kept with the commit, once
			if !slices.Equal(c.Warnings, []string{"sentinel S: the untouched base gets it wrong too; not checked"}) {
				t.Errorf("the judge's warnings on the commit's code: %q", c.Warnings)
			}
		})
	}
}
