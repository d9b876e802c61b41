package judge_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// waitTest is a test of the Go fixture that tells the judge's runs apart:
// in a judged run (FAST, which the patch adds, is there) it waits 3 s in a
// process marked MARK-judge; in the warming run (the base, run as the
// judged runs are, through the judge's go -exec wrapper) it waits in one
// marked MARK-warm until the judge stops it; in the baseline (neither) it
// returns.
const waitTest = `package calc

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestWait(t *testing.T) {
	if _, err := os.Stat("FAST"); err == nil {
		exec.Command("/bin/sh", "-c", "sleep 3; : MARK-judge").Run()
	} else if strings.Contains(os.Getenv("GOFLAGS"), "-exec=") {
		exec.Command("/bin/sh", "-c", "sleep 300; : MARK-warm").Run()
	}
}
`

// TestJudgeWarmYields: the warming run, started beside the first judged
// runs, gives way to them: read from outside, its group (its cgroup's
// weight, else its session's group) is at the judge's priority while
// nothing is judged, ten steps down while a patch's run is running, and
// back once it is done. The judged run's own group stays at the judge's
// priority, and its verdict passes.
func TestJudgeWarmYields(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "go")
	if fi, err := os.Stat(goEnv(t, "GOCACHE")); err != nil || !fi.IsDir() {
		testutil.SkipNotApplicable(t, "no Go build cache: nothing to warm")
	}
	mark := fmt.Sprintf("warm-yield-%d", time.Now().UnixNano())
	files := maps.Clone(goFiles)
	files["wait_test.go"] = strings.ReplaceAll(waitTest, "MARK", mark)
	files["calc.go"] = strings.Replace(files["calc.go"], "return a - b }", "return a + b }", 1)
	repo := fixture(t, files)
	patch := makePatch(t, repo, map[string]edit{"FAST": {content: "fast\n"}})
	s, err := workspace.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	j, err := judge.Prepare(ctx, judge.Options{Store: s, CacheDir: filepath.Join(t.TempDir(), "cache"), Repo: repo,
		Test: "go test ./...", Warm: true, Slots: judge.NewSlots(2)})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	steps := func(pid int) int {
		if n, ok := testutil.GroupSteps(pid); ok {
			return n
		}
		return -1
	}
	// until is the first of pid's steps that is want, polled for up to
	// 30 s, or the last read
	until := func(pid, want int) int {
		n := -1
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if n = steps(pid); n == want || time.Now().After(deadline) {
				return n
			}
		}
	}
	warm := 0
	for deadline := time.Now().Add(3 * time.Minute); warm == 0; time.Sleep(50 * time.Millisecond) {
		if p := testutil.ProcsWith(mark + "-warm"); len(p) > 0 {
			warm = p[0]
		} else if time.Now().After(deadline) {
			_, why := j.WaitWarm(ctx)
			t.Fatalf("the warming run did not reach its wait in 3 minutes (%s)", why)
		}
	}
	if n := until(warm, 0); n != 0 {
		if n == -1 && !testutil.Autogroup() {
			testutil.SkipOrFail(t, "neither a cgroup of forkbomb's with a CPU weight nor autogroup here: the warming run's yield does nothing (SECURITY.md)")
		}
		t.Fatalf("with nothing judged, the warming run's group is %d steps down; want 0", n)
	}
	type result struct {
		v   *judge.Verdict
		err error
	}
	done := make(chan result, 1)
	go func() {
		vs, err := j.Judge(ctx, [][]byte{patch})
		if err != nil {
			done <- result{err: err}
			return
		}
		done <- result{v: vs[0]}
	}()
	lowered, judged := -1, -1 // the most steps down: the warming run's, the judged run's
	var r result
	finished := false
	for deadline := time.Now().Add(3 * time.Minute); lowered != 10 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case r = <-done:
			finished = true
		default:
		}
		if finished {
			break
		}
		if p := testutil.ProcsWith(mark + "-judge"); len(p) > 0 {
			lowered, judged = max(lowered, steps(warm)), max(judged, steps(p[0]))
		}
	}
	if !finished {
		r = <-done
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.v.Verdict != event.Pass {
		t.Errorf("verdict %s: %s", r.v.Verdict, r.v.Reason)
	}
	if lowered != 10 {
		t.Errorf("while a patch was judged, the warming run's group was at most %d steps down; want 10", lowered)
	}
	if judged != 0 {
		t.Errorf("the judged run's own group was at most %d steps down; want 0", judged)
	}
	if n := until(warm, 0); n != 0 {
		t.Errorf("after the verdict, the warming run's group is %d steps down; want 0", n)
	}
}
