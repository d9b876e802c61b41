package judge_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestJudgeStoppedIsNoVerdict: a judged run its caller stops (another
// fork won, Ctrl-C) has no verdict — not "the patch does not apply"
// because git was killed reading it, not a failure because the test
// command was — but an error that says it was stopped, and why. Stopped
// at once and stopped while the test command runs.
func TestJudgeStoppedIsNoVerdict(t *testing.T) {
	t.Parallel()
	repo := fixture(t, map[string]string{"README": "base\n"})
	s, err := workspace.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	// The command stays while the patch's file is there: the base passes.
	j, err := judge.Prepare(context.Background(), judge.Options{Store: s, CacheDir: filepath.Join(s.Root, "..", "judge"), Repo: repo,
		Test: `sh -c 'if [ -e hang ]; then sleep 120; fi; echo ok'`})
	if err != nil {
		t.Fatal(err)
	}
	patch := makePatch(t, repo, map[string]edit{"hang": {content: "x\n"}})
	why := errors.New("fork 3 won")
	for name, after := range map[string]time.Duration{"at once": 0, "while it runs": 2 * time.Second} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancelCause(context.Background())
			time.AfterFunc(after, func() { cancel(why) })
			vs, err := j.Judge(ctx, [][]byte{patch})
			if len(vs) == 1 && vs[0] != nil {
				t.Fatalf("a stopped run has a verdict: %s — %s", vs[0].Verdict, vs[0].Reason)
			}
			if !errors.Is(err, judge.ErrCannotJudge) || !strings.Contains(err.Error(), "stopped") {
				t.Errorf("error %v, want one that says the judge was stopped", err)
			}
			if after > 0 && !errors.Is(err, why) {
				t.Errorf("error %v does not carry why it was stopped (%v)", err, why)
			}
		})
	}
}
