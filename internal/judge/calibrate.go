package judge

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// Calibration: a sentinel the untouched base gets wrong is not evidence.
//
// The sentinels never run at the baseline (it runs what the command
// really runs, to name the tests the judge plants beside). A base whose
// own code makes one come out wrong — a dependency or a --require'd
// setup file that wraps node:assert, a TestMain that relays its tests'
// output, a command that exits 0 whatever failed — would fail every patch
// as tampering, the honest ones too. So when a judged run gets a sentinel
// wrong in a way a base could, the Judger runs the test command on the
// base with the same sentinels (in the slot of the run that asked; a Go
// warming run, which is such a run already, gives its outcome instead),
// and a sentinel that the base ran and got wrong is excused for a patch
// that gets it exactly the same (the same outcome in the same run); a Go
// package's result and the command's exit 0 likewise. Such a sentinel is
// still planted and left out of the comparison; its failure accounts for
// the exit. The verdict's sentinel note and warnings name it.
//
// A sentinel that did not run is never excused, on the base or in the
// patched run: a package whose tests panic at the base runs none of its
// sentinels there, and a patch that ends the run at that very point must
// be caught by them (a hostile review's winner against the first form,
// which excused whatever the base got wrong).
//
// Nothing a patch does reaches that run: it is a fresh copy of the base,
// like the baseline's. What could disturb it is the machine it shares with
// agents still working (memory, disk, load); so its outcome is used only
// when its own tests came out exactly as the baseline's did. When they did
// not, nothing is excused, the reason says so, and the next judged run
// that needs it runs it again (calibrationTries). What an excused sentinel
// would have caught goes uncaught on that base: docs/JUDGE.md says so.

// calibration is a Judger's run of the base with its sentinels, made when
// a judged run first needs it. A run that could not be trusted is made
// again for the next judged run that needs it, up to calibrationTries.
type calibration struct {
	sem   chan struct{} // held while the run is made
	done  bool
	tries int
	base  wrongSet // what the base got wrong; nothing when untrusted
	note  string   // what it says, for the verdict
}

// calibrationTries is how many runs of the base a Judger makes at most
// when none can be trusted (its tests did not repeat the baseline's, it
// did not end within its limits): a flaky suite costs two extra runs,
// not one per patch.
const calibrationTries = 2

func newCalibration() *calibration { return &calibration{sem: make(chan struct{}, 1)} }

// calibrationRun is one run of the base with the sentinels, read.
type calibrationRun struct {
	base    wrongSet
	note    string
	trusted bool // its own tests came out as at the baseline
}

// result is the calibration, made by run if no one has made it yet; ok is
// false when ctx ended first (nothing is known).
func (c *calibration) result(ctx context.Context, run func(context.Context) (calibrationRun, bool)) (base wrongSet, note string, ok bool) {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return wrongSet{}, "", false
	}
	defer func() { <-c.sem }()
	if !c.done {
		r, finished := run(ctx)
		if !finished {
			return wrongSet{}, "", false
		}
		c.tries++
		c.base, c.note = r.base, r.note
		c.done = r.trusted || c.tries >= calibrationTries
	}
	return c.base, c.note, true
}

// offer records a trusted outcome made elsewhere (the warming run's)
// unless the calibration is made or being made.
func (c *calibration) offer(r calibrationRun) {
	if !r.trusted {
		return
	}
	select {
	case c.sem <- struct{}{}:
	default:
		return
	}
	defer func() { <-c.sem }()
	if !c.done {
		c.base, c.note, c.done = r.base, r.note, true
	}
}

// calibrate runs the test command on the base with j's sentinels and says
// what they got wrong there; false when ctx ended first.
func (j *Judger) calibrate(ctx context.Context) (calibrationRun, bool) {
	failed := func(err error) calibrationRun {
		return calibrationRun{note: "the base could not be run with the sentinels to check them (" + err.Error() + "), so no sentinel is excused"}
	}
	fork, cleanup, err := newFork(ctx, j.o.Store, j.pid1)
	if ctx.Err() != nil {
		return calibrationRun{}, false
	}
	if err != nil {
		return failed(err), true
	}
	defer cleanup()
	o := j.o
	var warmed func()
	o.goWarm, warmed = j.warm.use()
	defer warmed()
	run, err := runTests(ctx, o, fork, j.runCmd, nil, j.plan)
	if ctx.Err() != nil {
		return calibrationRun{}, false
	}
	if err != nil {
		return failed(err), true
	}
	return j.calibrated(run), true
}

// calibrated reads a run of the base with j's sentinels: what they got
// wrong that a base can excuse, if that run can be trusted, and the note
// that says so.
func (j *Judger) calibrated(run *testRun) calibrationRun {
	const prefix = "the untouched base, run with the sentinels, "
	if run.timedOut || run.limit != "" {
		return calibrationRun{note: prefix + "did not end within its limits, so no sentinel is excused"}
	}
	sc := checkSentinelRuns(j.plan, run.results, run.exit, run.sentinels, nil)
	if !sc.bad.excusable() {
		return calibrationRun{note: prefix + "got every sentinel that ran right (one that did not run is never excused)", trusted: true}
	}
	if d := differs(without(j.bl.Results, sc.skip), sc.cur); d != "" {
		return calibrationRun{note: fmt.Sprintf("%sgot %d wrong, but its own tests did not come out as at the baseline (%s), so no sentinel is excused", prefix, len(sc.report.Wrong), d)}
	}
	sc.bad.missing = false
	return calibrationRun{base: sc.bad, note: prefix + "got these wrong too, so they are not held against a patch that gets them the same: " + sc.bad.String(), trusted: true}
}

// String lists what w holds that a base can excuse.
func (w wrongSet) String() string {
	var parts []string
	for k, o := range w.sentinels {
		label, name, _ := strings.Cut(k, "\x00")
		parts = append(parts, fmt.Sprintf("%s was reported %s%s", name, o, label))
	}
	sort.Strings(parts)
	var pkgs []string
	for pkg := range w.pkgs {
		pkgs = append(pkgs, "package "+pkg+" was reported passing although a sentinel test in it must fail")
	}
	sort.Strings(pkgs)
	parts = append(parts, pkgs...)
	if w.exit {
		parts = append(parts, "the test command exits 0 although a sentinel test that must fail ran")
	}
	if w.sepExit {
		parts = append(parts, "the sentinel-only run exits 0 although a sentinel test that must fail ran")
	}
	return strings.Join(parts, "; ")
}

// differs says how cur's named outcomes differ from base's; "" when they
// are the same tests with the same outcomes.
func differs(base, cur *Results) string {
	if base == nil || cur == nil || !base.Named || !cur.Named {
		return "its tests are not named"
	}
	var d []string
	for name, was := range base.Tests {
		if now, ok := cur.Tests[name]; !ok {
			d = append(d, name+" did not run")
		} else if now != was {
			d = append(d, fmt.Sprintf("%s %s, %s at the baseline", name, now, was))
		}
	}
	for name := range cur.Tests {
		if _, ok := base.Tests[name]; !ok {
			d = append(d, name+" is new")
		}
	}
	if len(d) == 0 {
		return ""
	}
	sort.Strings(d)
	if len(d) > 3 {
		d = append(d[:3], fmt.Sprintf("and %d more", len(d)-3))
	}
	return strings.Join(d, "; ")
}
