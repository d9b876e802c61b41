package judge_test

import (
	"testing"

	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestIsBase: the kept copies of bases (this forkbomb's and an older one's)
// are told from every other workspace, which 'workspace prune --bases'
// must never remove.
func TestIsBase(t *testing.T) {
	t.Parallel()
	name := judge.BaseName("/repo", "0123456789abcdef0123456789abcdef01234567")
	for _, c := range []struct {
		name string
		kind workspace.Kind
		want bool
	}{
		{name, workspace.KindPid1, true},
		{"judge-" + name[len("base-"):], workspace.KindPid1, true},
		{name, workspace.KindFork, false},
		{"base-mine", workspace.KindPid1, false},
		{"base-0123456789ABCDEF", workspace.KindPid1, false},
		{name + "0", workspace.KindPid1, false},
		{"judge-run-0123456789ab", workspace.KindFork, false},
		{"run-" + name[len("base-"):], workspace.KindPid1, false},
	} {
		if got := judge.IsBase(&workspace.Meta{Name: c.name, Kind: c.kind}); got != c.want {
			t.Errorf("IsBase(%s %s) = %v, want %v", c.kind, c.name, got, c.want)
		}
	}
}
