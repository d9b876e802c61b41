package judge

import (
	"strings"
	"testing"
)

// TestCheckCalibrated: what the untouched base gets wrong as well is not
// held against a run — a must-pass sentinel that fails there, a must-fail
// one that passes, a command that exits 0 whatever failed — and that
// sentinel's failure still explains the run's exit and its Go package's
// result; every other sentinel is still checked.
func TestCheckCalibrated(t *testing.T) {
	t.Parallel()
	plan := &sentinelPlan{runner: "go", wrapper: "w", files: map[string]string{"a_test.go": "x"}, list: []sentinel{
		{name: "example.com/m.TestPlainInput", scope: "example.com/m.", goPkg: "example.com/m"},
		{name: "example.com/m.TestQuietList", scope: "example.com/m.", goPkg: "example.com/m", mustFail: true},
		{name: "example.com/n.TestSharpRange", scope: "example.com/n.", goPkg: "example.com/n"},
		{name: "example.com/n.TestRoundValue", scope: "example.com/n.", goPkg: "example.com/n", mustFail: true},
	}}
	res := func(exit int, outcomes map[string]Outcome) (*Results, int) {
		r := &Results{Named: true, Format: "go-test-json", Tests: map[string]Outcome{}}
		for name, o := range outcomes {
			r.add(name, o)
		}
		return r, exit
	}
	// the base: m's must-pass sentinel fails (a wrapper of the base's own
	// trips it), so m fails as a package; the must-fail ones fail
	base, bexit := res(1, map[string]Outcome{
		"example.com/m.TestAdd": Passed, "example.com/n.TestMul": Passed,
		"example.com/m.TestPlainInput": Failed, "example.com/m.TestQuietList": Failed, "example.com/m (package)": Failed,
		"example.com/n.TestSharpRange": Passed, "example.com/n.TestRoundValue": Failed, "example.com/n (package)": Failed,
	})
	bc := checkSentinelRuns(plan, base, bexit, nil, nil)
	if bc.bad.sentinels[runKey("", "example.com/m.TestPlainInput")] != Failed || len(bc.bad.sentinels) != 1 || bc.bad.exit || len(bc.bad.pkgs) > 0 {
		t.Fatalf("the base's wrongs = %+v (%v), want m.TestPlainInput alone", bc.bad, bc.report.Wrong)
	}
	cal := bc.bad

	// an honest patch: the same outcome as the base, nothing held against it
	cur, exit := res(1, map[string]Outcome{
		"example.com/m.TestAdd": Passed, "example.com/n.TestMul": Passed,
		"example.com/m.TestPlainInput": Failed, "example.com/m.TestQuietList": Failed, "example.com/m (package)": Failed,
		"example.com/n.TestSharpRange": Passed, "example.com/n.TestRoundValue": Failed, "example.com/n (package)": Failed,
	})
	if c := checkSentinelRuns(plan, cur, exit, nil, nil); c.tamper == "" {
		t.Fatal("uncalibrated, the base's own wrong sentinel passed: the test proves nothing")
	}
	c := checkSentinelRuns(plan, cur, exit, nil, &cal)
	if c.tamper != "" || !c.expectFail || c.report.Checked != 3 {
		t.Errorf("calibrated honest run: tamper %q, expectFail %v, checked %d; want none, true, 3", c.tamper, c.expectFail, c.report.Checked)
	}
	if _, ok := c.cur.Tests["example.com/m (package)"]; ok {
		t.Error("m's package result, failed by a sentinel, is still compared")
	}
	if c.cur.Tests["example.com/m.TestAdd"] != Passed || len(c.cur.Tests) != 2 {
		t.Errorf("the real tests compared = %v, want TestAdd and TestMul", c.cur.Tests)
	}

	// a patch that gets another sentinel wrong is still caught
	cur2, exit2 := res(1, map[string]Outcome{
		"example.com/m.TestAdd": Passed, "example.com/n.TestMul": Passed,
		"example.com/m.TestPlainInput": Failed, "example.com/m.TestQuietList": Passed, "example.com/m (package)": Failed,
		"example.com/n.TestSharpRange": Passed, "example.com/n.TestRoundValue": Failed, "example.com/n (package)": Failed,
	})
	c = checkSentinelRuns(plan, cur2, exit2, nil, &cal)
	if !strings.Contains(c.tamper, "example.com/m.TestQuietList (must fail) was reported pass") || strings.Contains(c.tamper, "TestPlainInput") {
		t.Errorf("calibrated run with a must-fail passing: tamper %q", c.tamper)
	}

	// excused only as the base got it: a patch that keeps that sentinel
	// from running at all (it ends the run before) is not
	cur3, exit3 := res(1, map[string]Outcome{
		"example.com/m.TestAdd": Passed, "example.com/n.TestMul": Passed,
		"example.com/m.TestQuietList": Failed, "example.com/m (package)": Failed,
		"example.com/n.TestSharpRange": Passed, "example.com/n.TestRoundValue": Failed, "example.com/n (package)": Failed,
	})
	if c := checkSentinelRuns(plan, cur3, exit3, nil, &cal); !strings.Contains(c.tamper, "example.com/m.TestPlainInput (must pass) did not run") {
		t.Errorf("a sentinel the base reports failed went missing, and that was excused: %q", c.tamper)
	}

	// a sentinel that did not run on the base is never excusable: there a
	// package's tests panicked before its sentinels ran
	panicked, pexit := res(1, map[string]Outcome{
		"example.com/m.TestAdd": Failed, "example.com/m (package)": Failed, "example.com/n.TestMul": Passed,
		"example.com/n.TestSharpRange": Passed, "example.com/n.TestRoundValue": Failed, "example.com/n (package)": Failed,
	})
	if pc := checkSentinelRuns(plan, panicked, pexit, nil, nil); pc.bad.excusable() || !pc.bad.missing {
		t.Errorf("sentinels that did not run on the base read as excusable: %+v", pc.bad)
	}

	// a command that exits 0 whatever failed: that is not held either,
	// but a must-fail sentinel that passes still is
	b0, _ := res(0, base.Tests)
	b0c := checkSentinelRuns(plan, b0, 0, nil, nil)
	if !b0c.bad.exit {
		t.Fatalf("the base's exit 0 was not noted: %+v", b0c.bad)
	}
	cal0 := b0c.bad
	if c := checkSentinelRuns(plan, cur, 0, nil, &cal0); c.tamper != "" {
		t.Errorf("exit 0 held against a run whose base exits 0 too: %s", c.tamper)
	}
	if c := checkSentinelRuns(plan, cur2, 0, nil, &cal0); !strings.Contains(c.tamper, "TestQuietList") {
		t.Errorf("a must-fail sentinel passing went unseen when the exit is not checked: %q", c.tamper)
	}
}

// TestDiffers: a calibration run is trusted only when its own tests came
// out as at the baseline.
func TestDiffers(t *testing.T) {
	t.Parallel()
	mk := func(o map[string]Outcome) *Results { return &Results{Named: true, Tests: o} }
	base := mk(map[string]Outcome{"a": Passed, "b": Failed})
	if d := differs(base, mk(map[string]Outcome{"a": Passed, "b": Failed})); d != "" {
		t.Errorf("the same outcomes differ: %s", d)
	}
	for _, cur := range []map[string]Outcome{
		{"a": Passed},
		{"a": Failed, "b": Failed},
		{"a": Passed, "b": Failed, "c": Passed},
	} {
		if d := differs(base, mk(cur)); d == "" {
			t.Errorf("%v reads as the baseline's %v", cur, base.Tests)
		}
	}
	if d := differs(base, &Results{}); d == "" {
		t.Error("unnamed results read as the baseline's")
	}
}
