package bisect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/forkbomb/forkbomb/internal/lab"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// Options say what to bisect and how.
type Options struct {
	Store *workspace.Store
	Repo  string // any folder inside the user's repository (only read)
	Good  string
	Bad   string
	Test  string // a shell command, run with sh -c in each commit's tree
	Forks int    // commits tested at once (K); 0: 1
	// Policy holds the sandbox settings of every test (limits, network,
	// timeout); its Command and Workdir are set here.
	Policy sandbox.Policy
	// Progress, when set, hears each round as it ends.
	Progress func(Progress)
}

// Progress is one round's report.
type Progress struct {
	Round     int
	Remaining int // commits still unknown between the last good and the first bad
	Tested    []Tested
}

// Tested is one commit's test.
type Tested struct {
	Commit  string  `json:"commit"`
	Index   int     `json:"index"` // 0: the oldest commit after good
	Verdict Verdict `json:"verdict"`
	Round   int     `json:"round"`
}

// Result is a finished bisect.
type Result struct {
	Good string `json:"good"`
	Bad  string `json:"bad"`
	// FirstBad is the first bad commit, or "" when skipped commits leave
	// several possible (Candidates lists them).
	FirstBad   string   `json:"first_bad,omitempty"`
	Subject    string   `json:"subject,omitempty"`
	Candidates []string `json:"candidates"`
	Commits    int      `json:"commits"` // in the range, bad included
	Forks      int      `json:"forks"`
	Rounds     int      `json:"rounds"`
	Tested     []Tested `json:"tested"`
	Seconds    float64  `json:"seconds"`
}

// applyFailed and applyMarker tell a diff that does not apply from the
// test's own status.
const (
	applyFailed = 222
	applyMarker = "forkbomb-bisect: the diff of the commit does not apply" // no quote: it sits in single quotes in script
)

// script applies the commit's diff (on stdin, when $2 is 1) to the fork's
// tree, then runs the test ($1). git apply reads stdin to its end, so the
// test starts with stdin at EOF.
const script = `if [ "$2" = 1 ]; then git apply --binary --whitespace=nowarn - >&2 || { echo '` + applyMarker + `' >&2; exit 222; }; fi
exec sh -c "$1"`

// Run bisects. The snapshots and every fork it makes are removed when it
// returns.
func Run(ctx context.Context, o Options) (*Result, error) {
	start := time.Now()
	if o.Test == "" {
		return nil, errors.New("bisect: no test command")
	}
	if o.Forks < 1 {
		o.Forks = 1
	}
	// Both ends are named in the user's repository (its tags and
	// branches), which is only read; the snapshot has bad's history only.
	_, good, err := workspace.ResolveBase(ctx, o.Repo, o.Good)
	if err != nil {
		return nil, fmt.Errorf("good %q: %w", o.Good, err)
	}
	_, bad, err := workspace.ResolveBase(ctx, o.Repo, o.Bad)
	if err != nil {
		return nil, fmt.Errorf("bad %q: %w", o.Bad, err)
	}
	pid1 := "bisect-" + lab.NewID()
	goodPid1 := pid1 + "-good"
	// The snapshot of bad, a second of good (below), and the probe of how
	// forks are made, all at once: none waits for another. If bad's
	// fails, the other two are stopped.
	prepCtx, stopPrep := context.WithCancel(ctx)
	defer stopPrep()
	var prep sync.WaitGroup
	prep.Go(func() { o.Store.PrepareForks(prepCtx) })
	var goodErr error
	prep.Go(func() {
		_, goodErr = o.Store.New(prepCtx, goodPid1, workspace.NewOptions{Repo: o.Repo, Rev: good})
	})
	_, badErr := o.Store.New(ctx, pid1, workspace.NewOptions{Repo: o.Repo, Rev: bad})
	if badErr != nil {
		stopPrep()
	}
	prep.Wait()
	if goodErr == nil {
		defer o.Store.Remove(context.WithoutCancel(ctx), goodPid1)
	}
	if badErr != nil {
		return nil, fmt.Errorf("snapshot %s: %w", o.Bad, badErr)
	}
	defer o.Store.Remove(context.WithoutCancel(ctx), pid1)
	h, err := o.Store.History(pid1)
	if err != nil {
		return nil, err
	}
	commits, err := h.FirstParents(ctx, good, bad)
	if err != nil {
		return nil, err
	}
	if len(commits) == 0 {
		return nil, ErrEmptyRange
	}
	// The snapshot of good serves the older half of the range: each
	// commit is forked from the nearer one, so no diff spans more than
	// half the range. Its history stops at good; the diffs are made from
	// bad's, which holds every commit.
	snaps := []snapshot{{name: pid1, commit: bad, from: len(commits) / 2}}
	if len(commits) > 2 {
		if goodErr != nil {
			return nil, fmt.Errorf("snapshot %s: %w", o.Good, goodErr)
		}
		snaps = append(snaps, snapshot{name: goodPid1, commit: good, from: 0})
	}
	res := &Result{Good: good, Bad: bad, Commits: len(commits), Forks: o.Forks, Tested: []Tested{}}
	// A fork is removed once its verdict is read, while the next round
	// starts; every removal ends before the snapshots' (deferred above).
	var removes sync.WaitGroup
	defer removes.Wait()
	probe := func(ctx context.Context, i int) (Verdict, error) {
		sn := nearest(snaps, i)
		return testCommit(ctx, o, h, &removes, sn.name, fmt.Sprintf("%s-%d", pid1, i), sn.commit, commits[i])
	}
	onRound := func(round int, got map[int]Verdict, remaining int) {
		var ts []Tested
		for i := range commits {
			if v, ok := got[i]; ok {
				ts = append(ts, Tested{Commit: commits[i], Index: i, Verdict: v, Round: round})
			}
		}
		res.Tested = append(res.Tested, ts...)
		if o.Progress != nil {
			o.Progress(Progress{Round: round, Remaining: remaining, Tested: ts})
		}
	}
	a, err := Search(ctx, len(commits), o.Forks, probe, onRound)
	if err != nil {
		return nil, err
	}
	res.Rounds = a.Rounds
	for _, i := range a.Candidates {
		res.Candidates = append(res.Candidates, commits[i])
	}
	if len(res.Candidates) == 1 {
		res.FirstBad = res.Candidates[0]
		res.Subject, _ = h.Subject(ctx, res.FirstBad)
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// snapshot is a pid 1 of one end of the range, serving the commits from
// index from on (until the next snapshot's).
type snapshot struct {
	name, commit string
	from         int
}

// nearest is the snapshot serving commit i: the one with the greatest
// from not after i.
func nearest(snaps []snapshot, i int) snapshot {
	best := snaps[0]
	for _, s := range snaps {
		if s.from <= i && (s.from > best.from || best.from > i) {
			best = s
		}
	}
	return best
}

// testCommit forks the snapshot, applies the diff from the snapshot to
// commit inside the fork's sandbox, runs the test there and reads its
// status as git bisect run does.
func testCommit(ctx context.Context, o Options, h *workspace.History, removes *sync.WaitGroup, pid1, fork, snap, commit string) (Verdict, error) {
	diff, err := h.Diff(ctx, snap, commit)
	if err != nil {
		return "", fmt.Errorf("diff %s: %w", commit, err)
	}
	if _, err := o.Store.Fork(ctx, pid1, fork); err != nil {
		return "", fmt.Errorf("fork for %s: %w", commit, err)
	}
	defer removes.Go(func() { o.Store.Remove(context.WithoutCancel(ctx), fork) })
	p := o.Policy
	apply := "0"
	if len(diff) > 0 {
		apply = "1"
	}
	p.Command = []string{"sh", "-c", script, "forkbomb-bisect", o.Test, apply}
	p.Workdir = ""
	if p.Overlay != nil {
		ov := *p.Overlay
		p.Overlay = &ov
	}
	out := lab.Tail{Max: 8 << 10} // enough to say why a diff did not apply
	r, err := o.Store.Exec(ctx, fork, p, sandbox.Stdio{Stdin: bytes.NewReader(diff), Stdout: &out, Stderr: &out})
	if err != nil {
		return "", fmt.Errorf("test %s: %w", commit, err)
	}
	switch {
	case r.TimedOut:
		return "", fmt.Errorf("%w: the test of %s timed out", ErrAborted, commit)
	case r.Limit != "":
		return "", fmt.Errorf("%w: the test of %s was killed by the %s limit", ErrAborted, commit, r.Limit)
	case r.ExitCode == applyFailed && strings.Contains(out.String(), applyMarker):
		return "", fmt.Errorf("%s: %w: %s", commit, ErrApply, lab.LastLines(strings.Split(out.String(), applyMarker)[0], 1))
	case r.ExitCode == 0:
		return Good, nil
	case r.ExitCode == 125:
		return Skip, nil
	case r.ExitCode > 0 && r.ExitCode < 128:
		return Bad, nil
	}
	return "", fmt.Errorf("%w: the test of %s exited %d (git bisect run stops at 128 and up)", ErrAborted, commit, r.ExitCode)
}
