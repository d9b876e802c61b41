// Package worldrace is the worlds backend of a race (internal/world): Store is a run.Forks
// whose pid 1 is a copy of a world file and whose forks are world forks, driven through the
// world's shell, each shipping its /work as a git patch and judged by a check script in a fresh
// copy of the trunk with that patch applied. Run races through run.Race — the same events,
// record, limits and views as any race — and keeps the winner's world as TRUNK.winner. The
// trunk is never written. Drive runs one agent turn on a world.
package worldrace

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/record"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/world"
)

// Options are one world race.
type Options struct {
	Trunk  string       // the world file; only read
	Limits world.Limits // per exec, the agents' and the check's
	// Confined gives each agent its branch as a Confined workspace (an agent CLI in
	// forkbomb's sandbox, the world's MCP server its only tool) rather than the world's
	// shell, as the api engine takes it. Self is the forkbomb binary for that server ("":
	// this one).
	Confined bool
	Self     string
	// Race is the race as run.Race takes it — engine, task, prompt variants, forks, agent
	// timeout, runs folder, progress, subscribers — with Test the check: a shell script run in
	// a fresh copy of the trunk with a branch's patch applied, status 0 passing. Run sets its
	// Store, Judge and Repo.
	Race run.Options
}

// Result is how the race ended.
type Result struct {
	Run  *record.Run // as recorded; nil when the race could not start
	Dir  string      // the run's record
	File string      // TRUNK.winner when there is a winner
}

// ErrNoWinner is a race where no branch passed the check.
var ErrNoWinner = errors.New("no branch passed the check")

// Run races o.Race.Forks branches of the trunk through run.Race and keeps the winner's world
// — the branch as its agent left it, shell state and all — as TRUNK.winner. Its errors are
// run.Race's (run.ErrRecord: the record failed and the race was stopped), ErrNoWinner, and
// those of the store.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Race.Forks < 1 {
		return Result{}, fmt.Errorf("world race: --forks must be at least 1")
	}
	winnerFile := o.Trunk + ".winner"
	if _, err := os.Lstat(winnerFile); err == nil {
		return Result{}, fmt.Errorf("world race: %s exists", winnerFile)
	}
	s, err := Open(o)
	if err != nil {
		return Result{}, err
	}
	defer s.Close()
	ro := o.Race
	ro.Store, ro.JudgeStore, ro.Judge, ro.Repo, ro.Rev = s, nil, s.Judge, s.trunk, ""
	r, dir, err := run.Race(ctx, ro)
	res := Result{Run: r, Dir: dir}
	if err != nil {
		return res, err
	}
	if r.Winner != nil {
		if err := s.Keep(run.ForkName(r.ID, *r.Winner), winnerFile); err != nil {
			return res, err
		}
		res.File = winnerFile
	}
	if r.Status == event.RunNoWinner {
		return res, ErrNoWinner
	}
	return res, nil
}
