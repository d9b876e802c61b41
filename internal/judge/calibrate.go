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
// setup file that wraps node:assert, a conftest that registers a hook
// from a folder of its own, a command that exits 0 whatever failed —
// would fail every patch as tampering, the honest ones too. So when a
// judged run gets a sentinel wrong, the Judger runs the test command once
// on the base with the same sentinels (once per Judger, in the slot of
// the run that asked; a Go warming run, which is such a run already,
// gives its outcome instead) and does not hold against any patch what the
// base got wrong as well: those sentinels are still planted, and left out
// of the comparison, but not checked. The verdict's sentinel note and
// warnings name them.
//
// Nothing a patch does reaches that run: it is a fresh copy of the base,
// like the baseline's. What could disturb it is the machine it shares with
// agents still working (memory, disk, load); so its outcome is used only
// when its own tests came out exactly as the baseline's did, and when
// they did not, nothing is forgiven and the reason says so. What a
// calibrated sentinel would have caught goes uncaught on that base:
// docs/JUDGE.md says so.

// calibration is a Judger's run of the base with its sentinels, made at
// most once, when a judged run first needs it.
type calibration struct {
	sem  chan struct{} // held while the run is made
	done bool
	base wrongSet // what the base got wrong; nothing when untrusted
	note string   // what it says, for the verdict
}

func newCalibration() *calibration { return &calibration{sem: make(chan struct{}, 1)} }

// result is the calibration, made by run if no one has made it yet; ok is
// false when ctx ended first (nothing is known).
func (c *calibration) result(ctx context.Context, run func(context.Context) (wrongSet, string, bool)) (base wrongSet, note string, ok bool) {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return wrongSet{}, "", false
	}
	defer func() { <-c.sem }()
	if !c.done {
		b, n, finished := run(ctx)
		if !finished {
			return wrongSet{}, "", false
		}
		c.base, c.note, c.done = b, n, true
	}
	return c.base, c.note, true
}

// offer records an outcome made elsewhere (the warming run's) unless the
// calibration is made or being made.
func (c *calibration) offer(base wrongSet, note string) {
	select {
	case c.sem <- struct{}{}:
	default:
		return
	}
	defer func() { <-c.sem }()
	if !c.done {
		c.base, c.note, c.done = base, note, true
	}
}

// calibrate runs the test command on the base with j's sentinels and says
// what they got wrong there.
func (j *Judger) calibrate(ctx context.Context) (wrongSet, string, bool) {
	fork, cleanup, err := newFork(ctx, j.o.Store, j.pid1)
	if err != nil {
		if ctx.Err() != nil {
			return wrongSet{}, "", false
		}
		return wrongSet{}, "the base could not be run with the sentinels to check them (" + err.Error() + "), so nothing is forgiven", true
	}
	defer cleanup()
	o := j.o
	var warmed func()
	o.goWarm, warmed = j.warm.use()
	defer warmed()
	run, err := runTests(ctx, o, fork, j.runCmd, nil, j.plan)
	if ctx.Err() != nil {
		return wrongSet{}, "", false
	}
	if err != nil {
		return wrongSet{}, "the base could not be run with the sentinels to check them (" + err.Error() + "), so nothing is forgiven", true
	}
	b, n := j.calibrated(run)
	return b, n, true
}

// calibrated reads a run of the base with j's sentinels: what they got
// wrong, if that run can be trusted, and the note that says so.
func (j *Judger) calibrated(run *testRun) (wrongSet, string) {
	const prefix = "the untouched base, run with the sentinels, "
	if run.timedOut || run.limit != "" {
		return wrongSet{}, prefix + "did not end within its limits, so no sentinel is forgiven"
	}
	sc := checkSentinelRuns(j.plan, run.results, run.exit, run.sentinels, nil)
	if !sc.bad.any() {
		return wrongSet{}, prefix + "got every sentinel right"
	}
	if d := differs(without(j.bl.Results, sc.skip), sc.cur); d != "" {
		return wrongSet{}, fmt.Sprintf("%sgot %d wrong, but its own tests did not come out as at the baseline (%s), so no sentinel is forgiven", prefix, len(sc.report.Wrong), d)
	}
	return sc.bad, fmt.Sprintf("%sgot these wrong too, so they are not checked on it: %s", prefix, strings.Join(sc.report.Wrong, "; "))
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
