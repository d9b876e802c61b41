package judge_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// judgeOneVerdict judges one patch of edits and returns its verdict, for
// tests that look past pass and reason.
func judgeOneVerdict(t *testing.T, repo, test string, edits map[string]edit, tweak ...func(*judge.Options)) *judge.Verdict {
	t.Helper()
	s, err := workspace.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	o := judge.Options{Store: s, CacheDir: filepath.Join(s.Root, "..", "judge"), Repo: repo, Test: test}
	for _, f := range tweak {
		f(&o)
	}
	vs, err := judge.Judge(context.Background(), o, [][]byte{makePatch(t, repo, edits)})
	if err != nil {
		t.Fatalf("judge: %v", err)
	}
	t.Logf("%s — %s", vs[0].Verdict, vs[0].Reason)
	return vs[0]
}
