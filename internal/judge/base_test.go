package judge_test

import (
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestIsBase: the kept copies of bases (this forkbomb's and an older one's)
// are told from every other workspace, which 'workspace prune --bases'
// must never remove: a fork, another commit's or repository's name, or a
// pid 1 someone named alike.
func TestIsBase(t *testing.T) {
	t.Parallel()
	const repo, base, other = "/src/app", "0123456789abcdef0123456789abcdef01234567", "89abcdef0123456789abcdef0123456789abcdef"
	name := judge.BaseName(repo, base)
	hash := strings.TrimPrefix(name, "base-")
	for _, c := range []struct {
		m    workspace.Meta
		want bool
	}{
		{workspace.Meta{Name: name, Kind: workspace.KindPid1, Repo: repo, Base: base}, true},
		{workspace.Meta{Name: "judge-" + hash, Kind: workspace.KindPid1, Repo: repo, Base: base}, true},
		{workspace.Meta{Name: name, Kind: workspace.KindFork, Base: base}, false},
		{workspace.Meta{Name: name, Kind: workspace.KindPid1, Repo: repo, Base: other}, false},
		{workspace.Meta{Name: name, Kind: workspace.KindPid1, Repo: "/src/other", Base: base}, false},
		{workspace.Meta{Name: "base-0123456789abcdef", Kind: workspace.KindPid1, Repo: repo, Base: base}, false},
		{workspace.Meta{Name: "run-" + hash, Kind: workspace.KindPid1, Repo: repo, Base: base}, false},
		{workspace.Meta{Name: "base-mine", Kind: workspace.KindPid1, Repo: repo, Base: base}, false},
	} {
		if got := judge.IsBase(&c.m); got != c.want {
			t.Errorf("IsBase(%s %s of %s at %s) = %v, want %v", c.m.Kind, c.m.Name, c.m.Repo, c.m.Base, got, c.want)
		}
	}
}
