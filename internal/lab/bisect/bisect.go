package bisect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
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
	// Ahead counts the tests whose sandbox was started during the round
	// before theirs, so the test began as soon as its commit was picked.
	Ahead   int      `json:"started_ahead"`
	Tested  []Tested `json:"tested"`
	Seconds float64  `json:"seconds"`
}

// treeFailed and treeMarker tell a commit whose tree could not be made
// from the test's own status.
const (
	treeFailed = 222
	treeMarker = "forkbomb-bisect: the tree of the commit could not be made in the fork" // no single quote: it sits in single quotes in script
)

// begunMarker is the line the script writes just before the test starts
// (pool.begun).
const begunMarker = "forkbomb-bisect: the test begins"

// script runs in each fork's sandbox, started before the commit it is to
// test is known. It copies the snapshot's index (the fork's .git is read
// only), waits for the commit's id on stdin (EOF: not needed, exit 0),
// moves the tree from the snapshot's commit to it with a two-tree
// read-tree (only the paths that differ between the two trees are
// written; HEAD and .git are untouched), then runs the test ($1) with
// stdin at EOF. --reset, not -m: -m trusts no file whose stat data differs
// from the index's, and in a fork made by copying every file's does. git
// reads no system or global config, as the snapshot was made. Once the
// commit is handed over, one process (git) runs before the test: the copy
// (in the sandbox's own temporary folder) is removed beside the test, not
// before it.
const script = `i="${TMPDIR:-/tmp}/.forkbomb-bisect-index"
cp .git/index "$i" || { echo '` + treeMarker + `' >&2; exit 222; }
IFS= read -r c || exit 0
GIT_INDEX_FILE="$i" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_ATTR_NOSYSTEM=1 \
	git -c core.hooksPath=/dev/null -c core.fsmonitor=false read-tree --reset -u HEAD "$c" >&2 ||
	{ echo '` + treeMarker + `' >&2; exit 222; }
rm -f "$i" &
echo '` + begunMarker + `' >&2
exec sh -c "$1"`

// Run bisects. The snapshot and every fork it makes are removed when it
// returns.
func Run(ctx context.Context, o Options) (_ *Result, err error) {
	defer func() {
		// Interrupted: say so, whichever step it stopped (a git process
		// killed by the context says only that it was killed).
		if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w: %w", context.Cause(ctx), err)
		}
	}()
	start := time.Now()
	if o.Test == "" {
		return nil, errors.New("bisect: no test command")
	}
	if o.Forks < 1 {
		o.Forks = 1
	}
	// Both ends are named, and the range listed, in the user's repository
	// (its tags and branches), which is only read. Meanwhile the probe of
	// how forks are made runs; a failure stops it. good's error is said
	// first, as if it had been asked first.
	prepCtx, stopPrep := context.WithCancel(ctx)
	var prep sync.WaitGroup
	defer func() { stopPrep(); prep.Wait() }()
	prep.Go(func() { o.Store.PrepareForks(prepCtx) })
	top, commits, good, bad, err := resolveRange(prepCtx, o)
	if err != nil {
		return nil, err
	}
	// The snapshot of bad is shallow, len(commits)+1 commits deep: every
	// commit of the list is fewer than that from bad along first parents,
	// so each is there whole, and a long history before good is never
	// copied. (Where merges make other paths shorter, it can also hold
	// some commits older than good, or lack good itself: neither is tested.)
	pid1 := "bisect-" + lab.NewID()
	if _, err = o.Store.New(prepCtx, pid1, workspace.NewOptions{Repo: top, Rev: bad, Depth: len(commits) + 1, Temp: true}); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", o.Bad, err)
	}
	defer o.Store.Remove(context.WithoutCancel(ctx), pid1)
	h, err := o.Store.History(pid1)
	if err != nil {
		return nil, err
	}
	// Every sandbox, and its fork's removal, ends before the snapshot's
	// removal (deferred above).
	pl := newPool(ctx, o, pid1)
	defer pl.close()
	res := &Result{Good: good, Bad: bad, Commits: len(commits), Forks: o.Forks, Tested: []Tested{}}
	hooks := Hooks{
		Start: func(_ int, pick []int, others int) { pl.plan(pick, min(o.Forks, others)) },
		Round: func(round int, got map[int]Verdict, remaining int) {
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
		},
	}
	probe := func(ctx context.Context, i int) (Verdict, error) { return pl.test(ctx, i, commits[i]) }
	a, err := Search(ctx, len(commits), o.Forks, probe, hooks)
	if err != nil {
		return nil, err
	}
	res.Rounds = a.Rounds
	res.Ahead = int(pl.ahead.Load())
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

// resolveRange names good and bad (at once) and lists the commits after
// good up to bad along bad's first parents, in the user's repository.
func resolveRange(ctx context.Context, o Options) (top string, commits []string, good, bad string, err error) {
	var goodErr error
	var wg sync.WaitGroup
	wg.Go(func() { _, good, goodErr = workspace.ResolveBase(ctx, o.Repo, o.Good) })
	top, bad, err = workspace.ResolveBase(ctx, o.Repo, o.Bad)
	wg.Wait()
	switch {
	case goodErr != nil:
		return "", nil, "", "", fmt.Errorf("good %q: %w", o.Good, goodErr)
	case err != nil:
		return "", nil, "", "", fmt.Errorf("bad %q: %w", o.Bad, err)
	}
	if commits, err = workspace.RepoHistory(top).FirstParents(ctx, good, bad); err != nil {
		return "", nil, "", "", err
	}
	if len(commits) == 0 {
		return "", nil, "", "", ErrEmptyRange
	}
	return top, commits, good, bad, nil
}

// A pool starts sandboxes ahead: while a round's tests run, it starts the
// next round's (a fork of the snapshot, its sandbox, the script up to its
// read), so a picked commit's test waits only for its tree. How many is
// the most the next round can test (Hooks.Start); any not needed are told
// so (EOF) and removed.
type pool struct {
	ctx     context.Context // the bisect's
	o       Options
	pid1    string
	policy  sandbox.Policy // every sandbox's; its Timeout is 0 (timeout runs from the commit's hand-over, and again from the test's start)
	timeout time.Duration
	ahead   atomic.Int32 // tests whose box was started ahead
	seq     atomic.Int32 // names the forks

	mu       sync.Mutex
	idle     []*box       // started, no commit yet
	assigned map[int]*box // the round's, by commit index
	want     int          // the most the next round can test
	pending  int          // the round's tests not begun yet
	all      sync.WaitGroup
}

// A box is one fork and the sandbox started in it.
type box struct {
	fork   string
	ahead  bool
	in     *os.File // the script's stdin: the commit's id, then EOF
	ctx    context.Context
	cancel context.CancelCauseFunc
	out    boxOut
	mu     sync.Mutex
	limit  *time.Timer   // the time limit: from the commit's hand-over, then again from the test's start
	done   chan struct{} // closed once res and err are set
	res    *sandbox.Result
	err    error
}

// boxOut keeps the tail of a box's output, and calls begun, once, when the
// script says the test begins (the line is not kept). The line comes in
// one write: the script writes it whole, under PIPE_BUF, before the test
// can write anything.
type boxOut struct {
	tail  lab.Tail
	begun func()
	once  sync.Once
}

func (w *boxOut) Write(p []byte) (int, error) {
	if i := bytes.Index(p, []byte(begunMarker+"\n")); i >= 0 {
		w.once.Do(w.begun)
		w.tail.Write(p[:i])
		w.tail.Write(p[i+len(begunMarker)+1:])
		return len(p), nil
	}
	return w.tail.Write(p)
}

// errTimedOut is the cause a box's context ends with when its test ran out
// of time.
var errTimedOut = errors.New("the test's time limit")

func newPool(ctx context.Context, o Options, pid1 string) *pool {
	p := o.Policy
	timeout := p.Timeout
	p.Timeout = 0
	p.Command = []string{"sh", "-c", script, "forkbomb-bisect", o.Test}
	p.Workdir = ""
	return &pool{ctx: ctx, o: o, pid1: pid1, policy: p, timeout: timeout, assigned: map[int]*box{}}
}

// start forks the snapshot and starts the script in the fork; it returns
// at once.
func (pl *pool) start(ahead bool) *box {
	b := &box{fork: fmt.Sprintf("%s-%d", pl.pid1, pl.seq.Add(1)), ahead: ahead, done: make(chan struct{})}
	b.out.tail.Max = 8 << 10 // enough to say why a tree could not be made
	b.ctx, b.cancel = context.WithCancelCause(pl.ctx)
	b.out.begun = func() {
		b.mu.Lock()
		if b.limit != nil {
			b.limit.Reset(pl.timeout) // the test's own time, from now
		}
		b.mu.Unlock()
		pl.begun()
	}
	r, w, err := os.Pipe()
	if err != nil {
		b.in, b.err = nil, err
		b.cancel(nil)
		close(b.done)
		return b
	}
	b.in = w
	pl.all.Go(func() {
		defer b.cancel(nil)
		b.res, b.err = pl.run(b, r)
		r.Close()
		close(b.done)
		if !errors.Is(b.err, errNoFork) {
			pl.o.Store.Remove(context.WithoutCancel(pl.ctx), b.fork)
		}
	})
	return b
}

var errNoFork = errors.New("no fork")

func (pl *pool) run(b *box, stdin *os.File) (*sandbox.Result, error) {
	if _, err := pl.o.Store.ForkTemp(b.ctx, pl.pid1, b.fork); err != nil {
		return nil, fmt.Errorf("%w: %w", errNoFork, err)
	}
	p := pl.policy
	if p.Overlay != nil {
		ov := *p.Overlay
		p.Overlay = &ov
	}
	return pl.o.Store.Exec(b.ctx, b.fork, p, sandbox.Stdio{Stdin: stdin, Stdout: &b.out, Stderr: &b.out})
}

// plan gives a round's commits the sandboxes started ahead for them, and
// says how many the next round can need.
func (pl *pool) plan(pick []int, next int) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	for _, i := range pick {
		if n := len(pl.idle); n > 0 {
			pl.assigned[i], pl.idle = pl.idle[n-1], pl.idle[:n-1]
		}
	}
	pl.want, pl.pending = next, len(pick)
}

// take is commit i's box: the one planned for it, or one started now.
func (pl *pool) take(i int) *box {
	pl.mu.Lock()
	b, ok := pl.assigned[i]
	delete(pl.assigned, i)
	pl.mu.Unlock()
	if ok {
		return b
	}
	return pl.start(false)
}

// begun hears that one of the round's tests began: once all have, it
// starts as many boxes as the next round can need, so a round's own
// starts are never slowed by the next round's.
func (pl *pool) begun() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.pending--; pl.pending != 0 {
		return
	}
	for len(pl.idle) < pl.want {
		pl.idle = append(pl.idle, pl.start(true))
	}
}

// close tells every box not needed so, then waits for every sandbox to
// end and every fork to be removed.
func (pl *pool) close() {
	pl.mu.Lock()
	for _, b := range pl.idle {
		b.in.Close()
	}
	for _, b := range pl.assigned {
		b.in.Close()
	}
	pl.idle, pl.assigned = nil, nil
	pl.mu.Unlock()
	pl.all.Wait()
}

// test runs the test of commit (index i) in a box and reads its status as
// git bisect run does.
func (pl *pool) test(ctx context.Context, i int, commit string) (Verdict, error) {
	b := pl.take(i)
	stop := context.AfterFunc(ctx, func() { b.cancel(context.Cause(ctx)) })
	defer stop()
	if b.in != nil {
		if pl.timeout > 0 {
			// Making the tree is bounded too; the test gets the whole
			// limit again when it begins (boxOut.begun).
			b.mu.Lock()
			b.limit = time.AfterFunc(pl.timeout, func() { b.cancel(errTimedOut) })
			b.mu.Unlock()
		}
		io.WriteString(b.in, commit+"\n") // the pipe holds it; an error is the sandbox's, below
		b.in.Close()
	}
	<-b.done
	b.mu.Lock()
	if b.limit != nil {
		b.limit.Stop()
	}
	b.mu.Unlock()
	if b.ahead {
		pl.ahead.Add(1)
	}
	r, out := b.res, b.out.tail.String()
	switch {
	case b.err != nil && errors.Is(context.Cause(b.ctx), errTimedOut): // stopped by the limit, not merely past it
		return "", fmt.Errorf("%w: the test of %s timed out", ErrAborted, commit)
	case b.err != nil:
		return "", fmt.Errorf("test %s: %w", commit, b.err)
	case r.TimedOut: // the sandbox's own limit is off (newPool): never read as bad
		return "", fmt.Errorf("%w: the test of %s timed out", ErrAborted, commit)
	case r.Limit != "":
		return "", fmt.Errorf("%w: the test of %s was killed by the %s limit", ErrAborted, commit, r.Limit)
	case r.ExitCode == treeFailed && strings.Contains(out, treeMarker):
		return "", fmt.Errorf("%s: %w: %s", commit, ErrTree, lab.LastLines(strings.Split(out, treeMarker)[0], 1))
	case r.ExitCode == 0:
		return Good, nil
	case r.ExitCode == 125:
		return Skip, nil
	case r.ExitCode > 0 && r.ExitCode < 128:
		return Bad, nil
	}
	return "", fmt.Errorf("%w: the test of %s exited %d (git bisect run stops at 128 and up)", ErrAborted, commit, r.ExitCode)
}
