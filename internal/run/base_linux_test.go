package run_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// baseAgent notes, as it starts, the pid 1 its fork was made from and
// every pid 1 the store holds, then fixes the bug in its fork.
type baseAgent struct {
	store *workspace.Store
	mu    sync.Mutex
	from  map[string]bool // the forks' pid 1s
	pid1s map[string]bool // the store's pid 1s while agents work
}

func (a *baseAgent) Info() engine.Info { return engine.Info{Name: "base"} }

func (a *baseAgent) Run(ctx context.Context, w engine.Workspace, t engine.Task) engine.Outcome {
	all, err := a.store.List(ctx)
	if err != nil {
		return engine.Outcome{State: event.ForkCrashed, Err: err}
	}
	a.mu.Lock()
	for _, m := range all {
		if m.Kind == workspace.KindPid1 {
			a.pid1s[m.Name] = true
		} else if strings.HasPrefix(m.Name, "run-") {
			a.from[m.Pid1] = true
		}
	}
	a.mu.Unlock()
	res, err := w.Exec(ctx, sandbox.Policy{Command: []string{"/bin/sh", "-c", `sed -i 's/\$1 - \$2/$1 + $2/' lib.sh`}}, sandbox.Stdio{})
	if err != nil || res.ExitCode != 0 {
		return engine.Outcome{State: event.ForkCrashed, Err: err}
	}
	return engine.Outcome{State: event.ForkExited}
}

// TestRaceSharesBase: on this machine's store a race's forks are made from
// the judge's kept pid 1 of the base — the only pid 1 while they work, made
// once and found again by the next race, which copies nothing from the
// repository — and a workspace of that name that is not a snapshot of the
// base stops the race rather than being forked.
func TestRaceSharesBase(t *testing.T) {
	t.Parallel()
	dir := repo(t)
	top, base, err := workspace.ResolveBase(t.Context(), dir, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	want := judge.BaseName(top, base)
	o := options(t, dir)
	o.Forks, o.Verify = 2, 0
	s := o.Store.(*workspace.Store)
	var created []string
	for i := range 2 {
		a := &baseAgent{store: s, from: map[string]bool{}, pid1s: map[string]bool{}}
		o.Engine = a
		r, _, err := run.Race(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != event.RunWon {
			t.Fatalf("race %d: %s: %+v", i, r.Status, r.Fork)
		}
		if len(a.from) != 1 || !a.from[want] {
			t.Errorf("race %d: forks made from %v, want %s", i, a.from, want)
		}
		if len(a.pid1s) != 1 || !a.pid1s[want] {
			t.Errorf("race %d: pid 1s while the agents worked: %v, want %s alone", i, a.pid1s, want)
		}
		left, _ := s.List(t.Context())
		if len(left) != 1 || left[0].Name != want || left[0].Kind != workspace.KindPid1 || left[0].Base != base {
			t.Fatalf("race %d left %+v, want the pid 1 %s alone", i, left, want)
		}
		created = append(created, left[0].Created.String())
	}
	if created[0] != created[1] {
		t.Errorf("the kept pid 1 was made again: %v", created)
	}

	// A fork squatting on the name is no snapshot of the base.
	o = options(t, dir)
	o.Forks, o.Verify = 1, 0
	s = o.Store.(*workspace.Store)
	if _, err := s.New(t.Context(), "other", workspace.NewOptions{Repo: dir}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fork(t.Context(), "other", want); err != nil {
		t.Fatal(err)
	}
	o.Engine = &baseAgent{store: s, from: map[string]bool{}, pid1s: map[string]bool{}}
	if _, _, err := run.Race(t.Context(), o); err == nil || !strings.Contains(err.Error(), "not forkbomb's snapshot") {
		t.Errorf("a race over a fork named %s: %v", want, err)
	}
}
