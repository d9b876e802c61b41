// Package run is the race: one task, N forks of a pid 1, an agent in
// each, every fork judged by its patch as soon as its agent stops, the
// first passing fork the winner (or, with All, the best score), the rest
// killed, and everything recorded.
package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/home"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/modelproxy"
	"github.com/forkbomb/forkbomb/internal/record"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// Options are a race's inputs.
type Options struct {
	Store    Forks // the fork store: *workspace.Store, or another backend
	RunsDir  string
	CacheDir string
	Repo     string
	Rev      string
	Task     string
	Forks    int
	// Engine drives each fork's agent (engine.New builds one from its
	// name); the race never asks which engine it is.
	Engine  engine.Agent
	Prompts []string // one task variant per fork (optional)
	Test    string
	Hidden  []string
	All     bool
	Timeout time.Duration // per fork
	// Parallel is how many agents work at once (default: all forks).
	Parallel int
	// Limits bound each fork's agent (with the command engine, the agent
	// and everything it starts; with the api engine, each shell command)
	// and each test run judging a fork: a zero field is
	// sandbox.DefaultLimits(Parallel) — a share of the machine per fork at
	// work — and sandbox.Unlimited is none.
	Limits sandbox.Limits
	// Confine, when set, adds to every agent command's confinement (a lab
	// policy's extra readable and writable paths, environment, programs,
	// output cap); what the race itself confines — the hidden paths, the
	// limits — is applied after it and wins. The judge's runs never get it.
	Confine func(*sandbox.Policy)
	// Allow names the hosts (canonical host:port, modelproxy.ParseAllow)
	// each fork's agent may reach — through a CONNECT proxy forkbomb runs
	// on the host (HTTPS_PROXY/HTTP_PROXY in the fork), every connection
	// a net_connect event; everything else stays unreachable (the fork's
	// network namespace has only its loopback). Empty: --network none.
	// The judge's test runs stay offline whatever this says.
	Allow    []string
	Progress io.Writer
	// Subscribers get every event of the race, after the record and
	// besides the progress lines (a web view, say). Each is fed from a
	// queue of its own: a slow one delays nothing, one that fails is
	// detached.
	Subscribers []event.Subscriber
	// Judge readies the judge (nil: judge.Prepare).
	Judge PrepareJudge
	// JudgeSlots bounds the judged test runs at once, shared with every
	// other user of it (races of one process); nil: the race's judge has
	// slots of its own, one per core. Forks are judged as their agents
	// stop, so without a bound 16 forks mean 16 builds at once.
	JudgeSlots *judge.Slots

	// Verify is how many mutants of each passing fork's patch the
	// verifier judges (verify.go; DefaultVerify for --verify auto, 0: the
	// verifier is off). It works after the fork's verdict, on the winner
	// (every passing fork with All or MinStrength); and once every verdict
	// is given it compares passing forks whose patches differ on each
	// other's tests (compare.go).
	Verify int
	// VerifyTime caps the verifier's wall time per fork, and the
	// comparison's (0: see Options.verifyCap).
	VerifyTime time.Duration
	// MinStrength (0..1), when above 0, crowns only a passing fork whose
	// patch's mutants the tests catch at least this share of; one below
	// it is "unverified: tests too weak", and a run with no other winner
	// ends RunUnverified. It needs Verify.
	MinStrength float64

	// JudgeStore, when set, is where the judge makes its forks and runs
	// the tests (nil: Store). A remote backend (kube.Store) races forks
	// elsewhere and has the judge work here, on the same pid 1.
	JudgeStore judge.Forks
}

// Race runs the race and returns its record. The record is the race's
// memory: its first write error stops the race (every fork killed, the
// run's status "failed") and is returned wrapped in ErrRecord, with the
// run as far as it could be recorded.
func Race(ctx context.Context, o Options) (*record.Run, string, error) {
	if o.Forks <= 0 {
		o.Forks = 4
	}
	if o.Engine == nil {
		return nil, "", ErrNoEngine
	}
	if strings.TrimSpace(o.Test) == "" {
		return nil, "", errors.New("a race needs --test: forks are judged by the tests their patch passes")
	}
	if o.MinStrength < 0 || o.MinStrength > 1 || (o.MinStrength > 0 && o.Verify <= 0) {
		return nil, "", ErrMinStrength
	}
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Minute
	}
	o.Limits = ForkLimits(o)
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Judge == nil {
		o.Judge = prepareJudge
	}
	top, base, err := resolveBase(ctx, o.Store, o.Repo, o.Rev)
	if err != nil {
		return nil, "", err
	}
	runsDir, err := filepath.Abs(o.RunsDir)
	if err != nil {
		return nil, "", err
	}
	if err := home.CheckOutside("the runs directory", runsDir, top); err != nil {
		return nil, "", err
	}
	hide, err := forkHidden(runsDir, o.CacheDir, top, o.Hidden)
	if err != nil {
		return nil, "", err
	}

	// Removals outlive the run's cancellation: an interrupted run's
	// workspaces are still removed.
	cleanup := context.WithoutCancel(ctx)
	pruned := prune(ctx, o.Store, o.JudgeStore) // stops between removals when ctx ends
	defer pruned()
	reclaimInterrupted(cleanup, o.Store, runsDir)
	id := record.NewID()
	info := o.Engine.Info()
	rec, err := record.Create(runsDir, record.Run{
		ID: id, Task: o.Task, Engine: info.Name, Agent: info.Argv, Model: info.Model, Forks: o.Forks, Test: o.Test,
		Repo: top, Base: base, Started: time.Now().UTC(),
	}, append(secretValues(), info.Secrets...))
	if err != nil {
		return nil, "", err
	}
	defer rec.Close()
	// The record first, in the race's own goroutines; the progress and
	// the other subscribers from their queues.
	prog := newProgress(o.Progress, o.Forks, o.All, fmt.Sprintf("run %s: %d forks of %s at %s", id, o.Forks, top, base[:12]))
	sink := event.NewFanout(rec, append([]event.Subscriber{prog}, o.Subscribers...)...)
	defer sink.Close()
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	race := &race{o: o, hide: hide, rec: rec, sink: sink, stop: stop, results: make([]record.Fork, o.Forks), winner: -1,
		diffs: make(chan struct{}, runtime.NumCPU())}
	startData := event.RunStartData{ID: id, Task: o.Task, Forks: o.Forks, Engine: info.Name, EngineVersion: info.Version,
		Base: base, Test: o.Test, Limits: limitsData(o.Limits)}
	if len(o.Allow) > 0 {
		startData.Network = "allow:" + strings.Join(o.Allow, ",")
		if race.proxy, err = modelproxy.Start(modelproxy.Options{Allow: o.Allow}); err != nil {
			rec.Update(func(r *record.Run) { r.Status = event.RunFailed })
			return nil, "", fmt.Errorf("--network allow: %w", err)
		}
		defer race.proxy.Close()
	}
	race.emit(event.RunLevel, startData)

	// On this machine's store, where the judge works too, the forks are
	// made from the judge's clean copy of the base (judge.BasePid1): made
	// here if no earlier race or judgement of the base left one, and left
	// for the next. Every fork is an overlay (or a copy) of it, and a pid 1
	// never changes (SECURITY.md). Elsewhere (a cluster, a world) the race
	// has a pid 1 of its own.
	pid1, kept := "run-"+id, sharesBase(o)
	if kept {
		var release func()
		pid1, release, err = judge.BasePid1(rctx, o.Store, top, base)
		if err == nil {
			defer release() // after the forks' removal, deferred below
		}
	} else {
		_, err = o.Store.New(rctx, pid1, workspace.NewOptions{Repo: top, Rev: base, Temp: true})
	}
	if err != nil {
		rec.Update(func(r *record.Run) { r.Status = event.RunFailed })
		return nil, "", err
	}
	defer func() {
		if kept {
			return // left for the next race and judgement of the base
		}
		// The forks are gone by now; a lingering lock (a judge run winding
		// down) gets a moment before the pid 1 is left for the next
		// run's reclaim.
		for i := 0; i < 20; i++ {
			if err := o.Store.Remove(cleanup, pid1); err == nil || errors.Is(err, workspace.ErrNotFound) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	judgeStore := o.JudgeStore
	if judgeStore == nil {
		judgeStore = o.Store
	}
	jo := judge.Options{Store: judgeStore, CacheDir: o.CacheDir, Repo: top, Rev: base, Test: o.Test, Hidden: o.Hidden, Hide: []string{runsDir}, Slots: o.JudgeSlots}
	jo.Limits = o.Limits // a fork's test runs get the share its agent got
	if jo.Slots == nil {
		// the comparison's judges (compare.go) take the race judge's slots
		jo.Slots = judge.NewSlots(0)
	}
	race.judgeOpts = jo
	// The judge (its pid 1 and baseline, then its warmed build cache:
	// judge/warm.go) is readied while the agents work; every verdict
	// waits for the first two. The comparison's judges, which judge two
	// patches each, warm nothing.
	raceJudge := jo
	raceJudge.Warm = true
	judgerDone := make(chan struct{})
	var judger Judger
	var judgerErr error
	go func() {
		// the baseline, which every verdict waits for, before the agents
		release := race.judging.Hold()
		judger, judgerErr = o.Judge(rctx, raceJudge)
		release()
		close(judgerDone)
	}()
	race.waitJudger = func() (Judger, error) {
		<-judgerDone
		return judger, judgerErr
	}
	// Once every verdict, mutant and comparison is in, the judge lets go
	// of what it holds (a judge still readying lets go when it is ready).
	closeJudger := func() {
		if c, ok := judger.(interface{ Close() }); ok && judgerErr == nil {
			c.Close()
		}
	}
	defer func() {
		select {
		case <-judgerDone:
			closeJudger()
		default:
			go func() { <-judgerDone; closeJudger() }()
		}
	}()

	forkCtx := make([]context.CancelFunc, o.Forks)
	race.cancel = forkCtx
	if o.Parallel <= 0 || o.Parallel > o.Forks {
		o.Parallel = o.Forks
	}
	slots := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	for n := 0; n < o.Forks; n++ {
		name := ForkName(id, n)
		if _, err := workspace.ForkTemp(rctx, o.Store, pid1, name); err != nil {
			stop()
			wg.Wait()
			return nil, "", err
		}
		fctx, cancel := context.WithCancel(rctx)
		forkCtx[n] = cancel
		race.results[n] = record.Fork{N: n, State: event.ForkRunning}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer o.Store.Remove(cleanup, name)
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
			case <-fctx.Done():
				race.setFork(n, func(f *record.Fork) { f.State = event.ForkKilled })
				return
			}
			race.fork(fctx, n, name)
		}()
	}
	wg.Wait()
	for _, c := range forkCtx {
		c()
	}

	if o.All && race.winner >= 0 {
		race.emit(race.winner, event.WinnerData{Reason: "best score of all forks"})
	}
	// Every verdict is given and the winner crowned: passing forks whose
	// patches differ are judged against each other's tests now.
	race.compare(rctx)
	status := event.RunNoWinner
	if race.winner >= 0 {
		status = event.RunWon
	} else if unverified(race.results) {
		status = event.RunUnverified
	} else if review := needsReview(race.results); len(review) > 0 {
		status = event.RunNeedsReview
	}
	if ctx.Err() != nil {
		status = event.RunInterrupted
	}
	if race.failed() != nil {
		status = event.RunFailed
	}
	if race.winner >= 0 {
		race.keep(rec.File("winner.patch", race.patches(race.winner)))
	}
	end := event.RunEndData{Status: status, Winner: race.winner}
	if status == event.RunNeedsReview {
		end.Review = needsReview(race.results)
	}
	race.emit(event.RunLevel, end)
	var final record.Run
	race.keep(rec.Update(func(r *record.Run) {
		if race.failed() != nil {
			status = event.RunFailed
		}
		r.Status = status
		if race.winner >= 0 {
			w := race.winner
			r.Winner = &w
		}
		r.Ended = time.Now().UTC()
		r.Seconds = r.Ended.Sub(r.Started).Seconds()
		r.Fork = race.results
		r.Compared = race.compared
		for _, f := range race.results {
			r.TokensIn += f.TokensIn
			r.TokensOut += f.TokensOut
			r.CostMicroUSD += f.CostMicroUSD
		}
		final = *r
	}))
	sink.Close() // the progress and the subscribers have every event
	if err := race.failed(); err != nil {
		return &final, rec.Dir, fmt.Errorf("%w: %w", ErrRecord, err)
	}
	return &final, rec.Dir, nil
}

// forkHidden lists what no agent may see, wherever the user keeps it: the
// runs (other runs' patches and verdicts), the judge's caches (baselines),
// the hidden tests, and the user's repository outside the fork. The store
// adds the workspaces (a sibling's upper layer) and the state home. A path
// that cannot be hidden (a system folder) refuses the race rather than
// show it.
func forkHidden(runsDir, cacheDir, repo string, hidden []string) ([]string, error) {
	out := []string{runsDir, repo}
	if cacheDir != "" {
		out = append(out, cacheDir)
	}
	out = append(out, hidden...)
	for i, p := range out {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("hide %s from the forks: %w", p, err)
		}
		if err := sandbox.CheckHide(abs); err != nil {
			return nil, fmt.Errorf("%s cannot be hidden from the forks: %w", p, err)
		}
		out[i] = abs
	}
	return out, nil
}

// secretValues are the credentials in forkbomb's environment, which the
// record must never hold.
func secretValues() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, val, _ := strings.Cut(kv, "=")
		up := strings.ToUpper(name)
		if strings.Contains(up, "KEY") || strings.Contains(up, "TOKEN") || strings.Contains(up, "SECRET") || strings.Contains(up, "PASSW") {
			out = append(out, val)
		}
	}
	return out
}

// reclaimInterrupted removes the workspaces of runs whose forkbomb was
// killed (their record reads "interrupted"): forks first, then a pid 1 of
// the run's own (a kept pid 1 of the base stays).
func reclaimInterrupted(ctx context.Context, s Forks, runsDir string) {
	all, err := s.List(ctx)
	if err != nil {
		return
	}
	var pid1s []string
	for _, m := range all {
		id, ok := runOf(m)
		if !ok {
			continue
		}
		// only a run whose record says its forkbomb is gone: a run
		// recorded elsewhere (another --runs-dir) may be alive
		if r, err := record.Load(runsDir, id); err != nil || r.Status != event.RunInterrupted {
			continue
		}
		if m.Kind == workspace.KindPid1 {
			pid1s = append(pid1s, m.Name)
		} else {
			s.Remove(ctx, m.Name)
		}
	}
	for _, p := range pid1s {
		s.Remove(ctx, p)
	}
}

// prune removes, in the background, the temporary workspaces whose
// forkbomb is gone, whatever made them, from each store that leases them
// (workspace.Store.Prune): a judged run's fork left by a killed judge
// would keep the kept base it was forked from. wait waits for it.
func prune(ctx context.Context, stores ...any) (wait func()) {
	var wg sync.WaitGroup
	seen := map[any]bool{}
	for _, s := range stores {
		p, ok := s.(interface {
			Prune(context.Context, workspace.PruneOptions) (*workspace.Pruned, error)
		})
		if !ok || seen[s] {
			continue
		}
		seen[s] = true
		wg.Go(func() { p.Prune(ctx, workspace.PruneOptions{}) })
	}
	return wg.Wait
}

// atOnce is how many forks work at the same time: parallel, at most forks.
// ForkLimits are the limits each fork's commands get in a race run with
// o: o.Limits, with the defaults for the forks that run at once.
func ForkLimits(o Options) sandbox.Limits {
	return o.Limits.Resolve(sandbox.DefaultLimits(ForksAtOnce(o)))
}

// ForksAtOnce is how many forks of o run at once: --parallel, or all.
func ForksAtOnce(o Options) int { return atOnce(o.Parallel, o.Forks) }

func atOnce(parallel, forks int) int {
	if parallel <= 0 || parallel > forks {
		return forks
	}
	return parallel
}

// limitsData is the record's view of the limits (0: none).
func limitsData(l sandbox.Limits) event.LimitsData {
	return event.LimitsData{Memory: max(l.Memory, 0), Pids: max(l.Pids, 0), CPUs: max(l.CPUs, 0), Text: l.String()}
}
