package judge

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// ErrCannotJudge means the judge itself could not run: a bad repository,
// a test command that does not exist, a sandbox that cannot start.
var ErrCannotJudge = errors.New("cannot judge")

// Forks is what the judge needs of a fork store: a pid 1 of the base
// (made once, found again by name), throwaway forks of it, a confined
// command in one, and the pid 1's files to read the base from. It is
// declared here, where it is used: *workspace.Store implements it, and so
// can a backend elsewhere (a cluster) that never imports the judge.
type Forks interface {
	Get(ctx context.Context, name string) (*workspace.Meta, error)
	New(ctx context.Context, name string, o workspace.NewOptions) (*workspace.Meta, error)
	Fork(ctx context.Context, src, dst string) (*workspace.Meta, error)
	// Exec runs a confined command in a fork. The judge asks, through
	// p, for the fork's tree at another path (Workdir: the repository's
	// own, judgedAt) and for a volatile overlay (Overlay.Volatile), see
	// workspace.Store.Exec; a store that cannot honour them runs the
	// command as usual.
	Exec(ctx context.Context, name string, p sandbox.Policy, stdio sandbox.Stdio) (*sandbox.Result, error)
	// Remove deletes a workspace. Cleaning up after a cancelled judgement,
	// the judge passes a context that outlives the cancellation.
	Remove(ctx context.Context, name string) error
	// Snapshot returns a host folder holding a pid 1's files, for
	// planning (which tests exist, which files the test command names);
	// a backend whose forks live elsewhere materialises one.
	Snapshot(ctx context.Context, name string) (string, error)
}

var _ Forks = (*workspace.Store)(nil)

// Options say what to judge against. Store holds the pid 1 and the
// throwaway forks; CacheDir the baselines.
type Options struct {
	Store    Forks
	CacheDir string
	Repo     string
	Rev      string
	Test     string   // the user's test command, run with /bin/sh -c
	Hidden   []string // folders laid over each judged copy (never seen by forks)
	// Hide lists what judged test runs must not see besides CacheDir
	// (the race's runs); the store hides the workspaces and the state
	// home. The hidden tests stay readable to the judge's own sandbox.
	Hide     []string
	Timeout  time.Duration // per test run
	Strip    StripOptions
	Parallel int // default: the number of cores
	// Slots, when set, bounds the judged runs of every Judger sharing it
	// (a process's races), in place of Parallel: with 16 forks judged as
	// their agents stop, 16 compile-and-link runs do not contend at once.
	Slots *Slots
	// Limits bound each test run (memory, processes, CPUs): a zero field
	// is sandbox.DefaultLimits(Parallel) — a share of the machine per
	// patch judged at once — and sandbox.Unlimited is none.
	Limits sandbox.Limits

	// Warm readies, once the baseline has run, a second kept Go build
	// cache: the test command run once more on the base with the
	// judge's sentinels planted, so that the sentinels' compiled tests
	// are cached under every later patched run and a patch recompiles
	// only what it changed (see warm.go). It costs that one run, made
	// in the background on one of the judge's slots, like a judged run:
	// for a race (whose baseline runs while its agents work) or many
	// patches. Close removes it.
	Warm bool

	goEnv []string // found once: GOCACHE, GOMODCACHE
	// at is where every judged copy of this base is seen (see
	// judgedAt); goLayer the baseline's kept Go build cache, laid
	// read-only under each patched run's; goWarm the warmed one (warm.go)
	// above it, when it is ready; goKeep, in the baseline and warming
	// runs, the folder that keeps the run's writes.
	at, goLayer, goWarm, goKeep string
	// path is the judged runs' PATH (judgedPATH), found once.
	path string
	// stagedFrom is the user's --hidden folder each staged copy was
	// made from (stageHidden), for errors that name one.
	stagedFrom map[string]string
	// yield, in the warming run, is the Judger's judged runs (Judger.testing):
	// the run's group gives way to them while any is running.
	yield *sandbox.Yield
}

// hidePaths is what a judged test run must not see, wherever it lives:
// the baselines (CacheDir) and what the caller adds (a race's runs).
func (o Options) hidePaths() []string {
	var out []string
	for _, p := range append([]string{o.CacheDir}, o.Hide...) {
		if p == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		out = append(out, p)
	}
	return out
}

// Verdict is the judgement of one patch. See docs/JUDGE.md for the schema
// (its "pass" is written from Verdict by MarshalJSON).
type Verdict struct {
	Verdict  event.Verdict `json:"verdict"`
	Reason   string        `json:"reason"`
	Applied  bool          `json:"applied"`
	Stripped []string      `json:"stripped"`
	ExitCode int           `json:"exit_code"`
	TimedOut bool          `json:"timed_out"`
	// Limit names the resource limit that stopped the test run
	// ("memory limit (2 GiB) reached"); such a run never passes.
	Limit    string    `json:"limit,omitempty"`
	Results  *Results  `json:"results"`
	Baseline *Baseline `json:"baseline"`
	Score    Score     `json:"score"`
	Failures []string  `json:"failures,omitempty"`
	TestCmd  string    `json:"test_command"`
	RanCmd   string    `json:"ran_command"`
	Base     string    `json:"base"`
	Timings  Timings   `json:"timings_ms"`
	// Sentinels: the tests the judge planted to catch a runner talked round.
	Sentinels *SentinelReport `json:"sentinels"`
	// Findings: what the patch adds outside tests that detects or
	// inspects a test run (evidence.go). A passing patch with findings is
	// a review, never a pass; a failing one keeps its verdict.
	Findings []Finding `json:"findings,omitempty"`
	// Tampered: the runner was caught talked round (a sentinel's outcome
	// was wrong, or the runner was a file of the repository).
	Tampered bool `json:"tampered"`
	// Warnings about the judgement as a whole (hidden tests that add
	// nothing, say); the CLI prints them on stderr too.
	Warnings []string `json:"warnings,omitempty"`
	// OutputTail is the end of the test command's output, kept in a
	// verdict that did not pass (a timeout included).
	OutputTail string `json:"output_tail,omitempty"`
	Output     string `json:"-"`
}

// MarshalJSON writes v with "pass" first, as verdict.json has always
// had it: true exactly when the verdict is event.Pass. It is derived, so
// it can never disagree with the verdict; a reader decoding a Verdict
// ignores it.
func (v Verdict) MarshalJSON() ([]byte, error) {
	type fields Verdict // the same fields, without this method
	return json.Marshal(struct {
		Pass bool `json:"pass"`
		fields
	}{v.Verdict == event.Pass, fields(v)})
}

// Baseline is the test command's outcome on the untouched base.
type Baseline struct {
	Results  *Results           `json:"results"`
	Tests    map[string]Outcome `json:"tests,omitempty"`
	ExitCode int                `json:"exit_code"`
	TimedOut bool               `json:"timed_out"`
	Ms       int64              `json:"ms"` // wall time of the baseline run (0 when cached)
	Cached   bool               `json:"cached"`
}

// Timings are in milliseconds.
type Timings struct {
	Queue int64 `json:"queue"` // waiting for a free slot (--parallel); not part of total
	Fork  int64 `json:"fork"`
	Test  int64 `json:"test"` // apply, hidden tests, sentinels and the test command, in one sandbox; bounded by --timeout
	// TestCPU is the processor time of that sandbox (sandbox.Result.CPU),
	// 0 where unknown: Test over TestCPU says how many such runs the
	// machine's cores hold at once without slowing each other.
	TestCPU int64 `json:"test_cpu,omitempty"`
	Total   int64 `json:"total"`
}

// Judger judges patches against one base. Prepare does the work all
// patches share once — the base, the pid 1, the command as run, the
// caches, the baseline — so a race that judges forks one at a time as they
// finish pays for it once.
type Judger struct {
	o        Options
	pid1     string
	release  func() // lets go of pid1 (BasePid1), once
	tree     string // the pid 1's files (Forks.Snapshot)
	base     string
	runCmd   string
	bl       *Baseline
	warnings []string
	// plan is the sentinels every copy this Judger judges gets: drawn
	// once, from the base, so that their compiled tests can be cached
	// (warm.go); fresh for every Judger.
	plan *sentinelPlan
	warm *warmCache // nil unless Options.Warm
	cal  *calibration
	// testing is held while a judged run is running: the warming run,
	// started beside the first judged runs, gives way to them.
	testing sandbox.Yield
}

// BaseName is the name of the pid 1 forkbomb keeps of commit base of the
// repository whose top is top (both as workspace.ResolveBase gives them):
// the judge's clean copy of that base, which a local race's forks are made
// from too, so that a base is copied from the user's repository once, not
// once for each race and once more for its judge. It stays for the next
// race or judgement of that base ('forkbomb workspace prune --bases'
// removes it once no forkbomb holds it: BasePid1).
func BaseName(top, base string) string { return "base-" + hashOf(top, base)[:16] }

// IsBase says whether m is a pid 1 forkbomb keeps of a base (BaseName of
// its own repository and commit), or one an older forkbomb kept for its
// judge alone ("judge-" and the same hash), which nothing uses any more. A
// workspace someone named alike is not one.
func IsBase(m *workspace.Meta) bool {
	if m.Kind != workspace.KindPid1 || m.Repo == "" || m.Base == "" {
		return false
	}
	h := hashOf(m.Repo, m.Base)[:16]
	return m.Name == "base-"+h || m.Name == "judge-"+h
}

// BasePid1 returns the pid 1 of commit base of the repository at top that
// s keeps (BaseName), making it if no earlier judgement or race left one.
// A workspace of that name that is not a pid 1 of base is an error, not a
// base. Where s can (workspace.Store.Hold), the pid 1 is held until
// release is called, so that 'workspace prune --bases' leaves it to the
// caller; release is never nil.
func BasePid1(ctx context.Context, s Forks, top, base string) (name string, release func(), err error) {
	name = BaseName(top, base)
	holder, _ := s.(interface {
		Hold(name string) (func(), error)
	})
	for try := 0; ; try++ {
		m, err := s.Get(ctx, name)
		if err != nil {
			if m, err = s.New(ctx, name, workspace.NewOptions{Repo: top, Rev: base}); errors.Is(err, workspace.ErrExists) {
				m, err = s.Get(ctx, name) // made meanwhile by another forkbomb
			}
			if err != nil {
				return "", nil, err
			}
		}
		if m.Kind != workspace.KindPid1 || m.Base != base {
			return "", nil, fmt.Errorf("workspace %s is not forkbomb's snapshot of %s; remove it ('forkbomb workspace rm %s')", name, base, name)
		}
		if holder == nil {
			return name, func() {}, nil
		}
		release, err := holder.Hold(name)
		if (errors.Is(err, workspace.ErrNotFound) || errors.Is(err, workspace.ErrInUse)) && try < 3 {
			continue // pruned meanwhile (made again), or being looked at by a prune
		}
		if err != nil {
			return "", nil, err
		}
		return name, release, nil
	}
}

// Prepare readies a Judger; its error is the judge's own.
func Prepare(ctx context.Context, o Options) (_ *Judger, err error) {
	if strings.TrimSpace(o.Test) == "" {
		return nil, fmt.Errorf("%w: no test command", ErrCannotJudge)
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Minute
	}
	o.Limits = o.Limits.Resolve(sandbox.DefaultLimits(parallelism(o.Parallel)))
	hidden := make([]string, len(o.Hidden))
	for i, h := range o.Hidden {
		abs, err := filepath.Abs(h)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: --hidden %s: no such directory", ErrCannotJudge, h)
		}
		hidden[i] = abs
	}
	o.Hidden = hidden
	top, base, err := workspace.ResolveBase(ctx, o.Repo, o.Rev)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCannotJudge, err)
	}
	j := &Judger{o: o, base: base, runCmd: structured(o.Test), cal: newCalibration()}
	var release func()
	if j.pid1, release, err = BasePid1(ctx, o.Store, top, base); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCannotJudge, err)
	}
	j.release = sync.OnceFunc(release)
	defer func() {
		if err != nil {
			j.release()
		}
	}()
	if o.CacheDir != "" {
		sandbox.ReclaimStaleIn(filepath.Join(o.CacheDir, tempDir))
	}
	staged, unstage := stageHidden(ctx, o.CacheDir, o.Hidden, top)
	j.o.Hidden = staged
	for i, h := range staged {
		if h != o.Hidden[i] {
			if j.o.stagedFrom == nil {
				j.o.stagedFrom = map[string]string{}
			}
			j.o.stagedFrom[h] = o.Hidden[i]
		}
	}
	j.release = sync.OnceFunc(func() { release(); unstage() })
	if j.tree, err = o.Store.Snapshot(ctx, j.pid1); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCannotJudge, err)
	}
	j.o.Strip.Named = append(append([]string{}, o.Strip.Named...), namedFiles(o.Test, j.tree)...)
	if script, ok := npmTestScript(j.tree, nil, o.Test); ok {
		// what npm test runs names its test files (node --test tests.js)
		j.o.Strip.Named = append(j.o.Strip.Named, namedFiles(script, j.tree)...)
	}
	// test-only code is test code (testonly.go): found once, from imports
	j.o.Strip.Add = append(append([]string{}, o.Strip.Add...), testOnlyPatterns(j.tree, o.Strip.Remove)...)
	j.o.goEnv = goCaches()
	if j.o.Slots == nil {
		j.o.Slots = NewSlots(parallelism(o.Parallel))
	}
	j.o.at = judgedAt(j.o, top, j.pid1)
	j.o.path = judgedPATH(os.Getenv("PATH"), j.o.at)
	if j.bl, j.o.goLayer, err = baseline(ctx, j.o, j.pid1, base, j.runCmd, true); err != nil {
		return nil, err
	}
	// a file the baseline ran tests from is a test file, whatever its name
	j.o.Strip.Named = append(j.o.Strip.Named, baselineTestFiles(j.tree, j.o.Hidden, j.bl)...)
	j.plan = planSentinels(j.tree, j.o.Hidden, j.o.Test, j.bl)
	if len(j.o.Hidden) > 0 {
		plain := j.o
		plain.Hidden = nil
		pb, _, err := baseline(ctx, plain, j.pid1, base, j.runCmd, false)
		if err != nil {
			return nil, err
		}
		if w := hiddenAddsNothing(pb, j.bl); w != "" {
			j.warnings = append(j.warnings, w)
		}
	}
	if o.Warm {
		j.warm = startWarm(ctx, j)
	}
	return j, nil
}

// Warnings are the judge's warnings about the judgement as a whole.
func (j *Judger) Warnings() []string { return append([]string{}, j.warnings...) }

// hiddenAddsNothing warns when the hidden tests change nothing the
// baseline reads: the test command never runs them.
func hiddenAddsNothing(without, with *Baseline) string {
	const w = "the --hidden tests add no test to the baseline: the test command does not run them, so they defend nothing"
	if with.Results == nil {
		return w
	}
	if without.Results == nil {
		return ""
	}
	if with.Results.Named && without.Results.Named {
		for name := range with.Results.Tests {
			if _, ok := without.Results.Tests[name]; !ok {
				return ""
			}
		}
		return w
	}
	if with.Results.Total()+with.Results.Skipped <= without.Results.Total()+without.Results.Skipped {
		return w
	}
	return ""
}

// Judge prepares and judges in one call.
func Judge(ctx context.Context, o Options, patches [][]byte) ([]*Verdict, error) {
	j, err := Prepare(ctx, o)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	return j.Judge(ctx, patches)
}

// Judge judges patches in parallel, as many at once as the Judger's slots
// allow across every call. The error is for the judge itself; a patch's
// failure is its Verdict. Once ctx has ended, no patch has a verdict:
// each has an error that says it was stopped, and why (context.Cause).
func (j *Judger) Judge(ctx context.Context, patches [][]byte) ([]*Verdict, error) {
	out := make([]*Verdict, len(patches))
	errs := make([]error, len(patches))
	var wg sync.WaitGroup
	for i, p := range patches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			queued := time.Now()
			release, err := j.o.Slots.acquire(ctx)
			if err != nil { // ctx ended
				errs[i] = fmt.Errorf("%w: stopped while waiting for a slot: %w", ErrCannotJudge, context.Cause(ctx))
				return
			}
			defer release()
			out[i], errs[i] = j.judgeOne(ctx, p)
			if ctx.Err() != nil {
				// Stopped by the caller (another fork won, Ctrl-C): a step
				// cut short — git killed while reading the patch, the test
				// command killed — says nothing of the patch, so it is no
				// verdict.
				out[i], errs[i] = nil, fmt.Errorf("%w: stopped before its verdict: %w", ErrCannotJudge, context.Cause(ctx))
				return
			}
			if out[i] != nil {
				out[i].Timings.Queue = time.Since(queued).Milliseconds() - out[i].Timings.Total
			}
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

func (j *Judger) judgeOne(ctx context.Context, patch []byte) (*Verdict, error) {
	o := j.o
	start := time.Now()
	v := &Verdict{TestCmd: o.Test, RanCmd: j.runCmd, Base: j.base, Baseline: j.bl, Warnings: j.Warnings()}
	kept, stripped, err := strip(ctx, patch, o.Strip)
	if err != nil && !errors.Is(err, ErrUnattributed) {
		return nil, err
	}
	v.Stripped = stripped
	if err == nil {
		v.Findings = inspectPatch(kept)
	}
	if v.Stripped == nil {
		v.Stripped = []string{}
	}
	if err != nil { // refused whole: nothing of it is applied
		v.Verdict, v.Reason = event.Fail, err.Error()
		v.Timings.Total = time.Since(start).Milliseconds()
		return v, nil
	}
	fork, cleanup, err := newFork(ctx, o.Store, j.pid1)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	v.Timings.Fork = time.Since(start).Milliseconds()

	// The Judger's sentinels, fresh for it rather than for each copy, so
	// that their compiled tests can be cached (warm.go says what that
	// costs).
	plan := j.plan
	var warmed func()
	o.goWarm, warmed = j.warm.use()
	released := j.testing.Hold()
	run, err := runTests(ctx, o, fork, j.runCmd, kept, plan)
	released()
	warmed()
	if err != nil {
		return nil, err
	}
	v.Sentinels = plan.report()
	if run.applyFailed {
		v.Verdict, v.Reason = event.Fail, "the patch does not apply: "+run.applyErr
		v.Timings.Total = time.Since(start).Milliseconds()
		return v, nil
	}
	v.Applied = true
	v.Timings.Test, v.Timings.TestCPU = run.elapsed.Milliseconds(), run.cpu.Milliseconds()
	v.ExitCode, v.TimedOut, v.Results, v.Output = run.exit, run.timedOut, run.results, run.output
	sc := checkSentinelRuns(plan, run.results, run.exit, run.sentinels, nil)
	if sc.bad.excusable() && !run.timedOut {
		// not held against the patch if the base gets it wrong too
		base, note, ok := j.cal.result(ctx, j.calibrate)
		if !ok {
			return nil, context.Cause(ctx)
		}
		if base.any() {
			sc = checkSentinelRuns(plan, run.results, run.exit, run.sentinels, &base)
			v.Warnings = append(v.Warnings, note)
		}
		sc.report.Note = strings.TrimPrefix(sc.report.Note+"; "+note, "; ")
	}
	cur, tamper := pytestCollected(j.bl.Results, nodeLoaded(j.bl.Results, sc.cur, sc.loaded, plan.own, o.at)), sc.tamper
	v.Sentinels = sc.report
	if run.runner != "" {
		tamper = strings.TrimSpace("tampering: the test runner is a file of the repository, not the installed one (" + run.runner + "); " + tamper)
	}
	if run.timedOut {
		tamper = ""
	}
	v.Verdict, v.Reason, v.Score = decide(without(j.bl.Results, sc.skip), cur, v.ExitCode, v.TimedOut, sc.expectFail)
	if run.timedOut {
		v.Reason = fmt.Sprintf("the test command timed out (--timeout %s; the run was stopped after %.0fs)", o.Timeout, run.elapsed.Seconds())
	}
	if run.limit != "" {
		v.Limit = run.limit
		v.Verdict, v.Reason = event.Fail, "the test run was stopped: "+run.limit
	}
	if tamper != "" {
		v.Tampered = true
		if v.Verdict != event.Pass {
			tamper += "; " + v.Reason
		}
		v.Verdict, v.Reason = event.Fail, tamper
	}
	if v.Verdict == event.Pass && len(v.Findings) > 0 {
		v.Verdict, v.Reason = event.Review, reviewReason(v.Findings)
	}
	if cur != nil {
		v.Results = cur
		for name, o := range cur.Tests {
			if o == Failed {
				v.Failures = append(v.Failures, name)
			}
		}
		sort.Strings(v.Failures)
	}
	if len(stripped) > 0 && v.Verdict != event.Pass {
		v.Reason += fmt.Sprintf(" (stripped edits to %d test or config file(s): %s)", len(stripped), names(append([]string{}, stripped...)))
	}
	if v.Verdict != event.Pass {
		out := run.output
		if !v.Tampered { // a tampering verdict's evidence is in the sentinels' lines
			out = plan.quiet(out)
		}
		v.OutputTail = tail(out)
	}
	v.Timings.Total = time.Since(start).Milliseconds()
	return v, nil
}

// baseline runs the test command once on the base (with the hidden tests)
// and caches the outcome in the base's folder (baseDir) by base commit,
// command and hidden tests, so N patches pay for it once. With keep, the
// Go build cache the run filled is kept beside it (goLayer, see
// keptGoCache) for the patched runs to read.
func baseline(ctx context.Context, o Options, pid1, base, runCmd string, keep bool) (_ *Baseline, goLayer string, _ error) {
	// v2: plugin autoloading off and no user site (runnerEnv)
	// v3: run at judgedPath, -count=1, its Go build cache kept
	// v4: run at the repository's own path (judgedAt), which is part of
	// the key: a judge's folder instead is another run
	// v5: node's processes run the judge's preload (preload_node.go)
	// v6: pytest runs the tests that collect past a collection error
	key := hashOf("v6", base, runCmd, hiddenHash(o.Hidden), o.at)
	path := ""
	var kept *keptGoCache
	if o.CacheDir != "" {
		path = filepath.Join(baseDir(o.CacheDir, pid1), "baseline-"+key[:32]+".json")
		if keep {
			kept = newKeptGoCache(o, pid1, key)
		}
		var b Baseline
		if data, err := os.ReadFile(path); err == nil && json.Unmarshal(data, &b) == nil {
			b.Cached = true
			return &b, kept.layer(), nil
		}
	}
	fork, cleanup, err := newFork(ctx, o.Store, pid1)
	if err != nil {
		return nil, "", err
	}
	defer cleanup()
	o.goKeep, err = kept.begin()
	if err != nil {
		return nil, "", err
	}
	defer kept.abandon()
	run, err := runTests(ctx, o, fork, runCmd, nil, nil)
	if err != nil {
		return nil, "", err
	}
	if run.exit == 127 && run.results == nil {
		return nil, "", fmt.Errorf("%w: the test command was not found in the sandbox (exit 127): %s", ErrCannotJudge, firstLine(run.output))
	}
	if run.limit != "" {
		return nil, "", fmt.Errorf("%w: the test command on the untouched base was stopped: %s (see --memory, --pids)", ErrCannotJudge, run.limit)
	}
	if run.runner != "" {
		return nil, "", fmt.Errorf("%w: the test runner is a file of the repository at the base (%s)", ErrCannotJudge, run.runner)
	}
	b := &Baseline{Results: run.results, ExitCode: run.exit, TimedOut: run.timedOut, Ms: run.elapsed.Milliseconds()}
	if !run.timedOut {
		goLayer = kept.commit()
	}
	if path != "" && !run.timedOut {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
			if data, err := json.Marshal(b); err == nil {
				tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
				if os.WriteFile(tmp, data, 0o600) == nil {
					os.Rename(tmp, path)
				}
			}
		}
	}
	return b, goLayer, nil
}

// newFork makes a throwaway fork of pid 1.
func newFork(ctx context.Context, s Forks, pid1 string) (string, func(), error) {
	var r [6]byte
	rand.Read(r[:])
	name := "judge-run-" + hex.EncodeToString(r[:])
	if _, err := workspace.ForkTemp(ctx, s, pid1, name); err != nil {
		return "", nil, fmt.Errorf("%w: fork: %v", ErrCannotJudge, err)
	}
	return name, func() { s.Remove(context.WithoutCancel(ctx), name) }, nil
}

// structured asks the runner for output the judge can read by name, where
// that changes nothing about what runs: -json for go test, -rA for pytest
// (one line per test), the TAP reporter for node's runner.
func structured(cmd string) string {
	if strings.ContainsAny(cmd, "|&;<>()$`\\\"'\n") {
		return cmd
	}
	f := strings.Fields(cmd)
	if len(f) > 0 {
		f[0] = filepath.Base(f[0])
	}
	switch {
	case len(f) >= 2 && f[0] == "go" && f[1] == "test" && !contains(f, "-json"):
		return strings.Replace(cmd, "test", "test -json", 1)
	case len(f) >= 1 && f[0] == "pytest",
		len(f) >= 3 && strings.HasPrefix(f[0], "python") && f[1] == "-m" && f[2] == "pytest":
		return cmd + " -rA -p no:cacheprovider"
	case len(f) >= 2 && f[0] == "node" && contains(f, "--test") && !strings.Contains(cmd, "--test-reporter"):
		return strings.Replace(cmd, "--test", "--test --test-reporter=tap", 1)
	}
	return cmd
}

// namedFiles are the files of the tree the test command names: a patch
// may not edit the script that runs the tests.
// baselineTestFiles are the files of the tree the baseline's results name
// as holding tests: for pytest, the file of each test id ("path::name") —
// a test file of a name no strip pattern knows (python_files =
// *_tests.py), a doctest text file (test*.txt, a --doctest-glob's *.rst) —
// but not a module whose docstrings are its only tests there
// (--doctest-modules: the code under test itself).
func baselineTestFiles(tree string, hidden []string, bl *Baseline) []string {
	if bl == nil || bl.Results == nil || bl.Results.Format != "pytest" {
		return nil
	}
	seen := map[string]bool{}
	var names []string
	for id := range bl.Results.Tests {
		f, doctest := pytestFile(id)
		if f == "" || seen[f] || doctest && strings.HasSuffix(f, ".py") {
			continue
		}
		seen[f] = true
		names = append(names, f)
	}
	var out []string
	for _, at := range pytestPaths(tree, hidden, names) { // the tree's paths (cd sub && pytest)
		out = append(out, at)
	}
	sort.Strings(out)
	return out
}

// pytestFile is the file a pytest test id names ("" for none), and whether
// the id is a doctest's: its item is a dotted name (a module's
// "calc.ops.mul", a text file's "test_usage.txt"), which a test function's
// or class's never is (a parametrization's brackets aside).
func pytestFile(id string) (file string, doctest bool) {
	f, item, ok := strings.Cut(id, "::")
	if !ok {
		return "", false
	}
	item, _, _ = strings.Cut(item, "::")
	item, _, _ = strings.Cut(item, "[")
	return f, strings.Contains(item, ".")
}

func namedFiles(cmd, tree string) []string {
	var out []string
	for _, tok := range strings.Fields(cmd) {
		tok = strings.Trim(tok, `"'`)
		tok = strings.TrimPrefix(tok, "./")
		if tok == "" || strings.HasPrefix(tok, "-") || strings.Contains(tok, "..") || filepath.IsAbs(tok) {
			continue
		}
		if strings.ContainsAny(tok, "*?[") {
			// a shell glob (node --test check/*.js): the files it names
			matches, _ := filepath.Glob(filepath.Join(tree, tok))
			for _, m := range matches {
				if fi, err := os.Lstat(m); err == nil && fi.Mode().IsRegular() {
					if rel, err := filepath.Rel(tree, m); err == nil {
						out = append(out, filepath.ToSlash(rel))
					}
				}
			}
			continue
		}
		if fi, err := os.Lstat(filepath.Join(tree, tok)); err == nil && fi.Mode().IsRegular() {
			out = append(out, filepath.ToSlash(tok))
		}
	}
	return out
}

func contains(f []string, s string) bool {
	for _, x := range f {
		if x == s {
			return true
		}
	}
	return false
}

func hashOf(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s;", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// hiddenHash identifies the hidden tests by their content.
func hiddenHash(dirs []string) string {
	h := sha256.New()
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return nil
			}
			data, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(d, p)
			fmt.Fprintf(h, "%s %d %x\n", rel, len(data), sha256.Sum256(data))
			return nil
		})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// parallelism is how many patches are judged at once: n, or the number of
// cores.
func parallelism(n int) int {
	if n <= 0 {
		return runtime.NumCPU()
	}
	return n
}
