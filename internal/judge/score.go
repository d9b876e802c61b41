package judge

import (
	"fmt"
	"sort"
	"strings"

	"github.com/forkbomb/forkbomb/internal/event"
)

// Score ranks partial fixes: how the baseline's tests fare now.
type Score struct {
	BaselineTests int     `json:"baseline_tests"`
	PassingNow    int     `json:"passing_now"`
	Fixed         int     `json:"fixed"`         // failed at baseline, pass now
	Broken        int     `json:"broken"`        // passed at baseline, fail now
	StillFailing  int     `json:"still_failing"` // failed at baseline, fail now
	Missing       int     `json:"missing"`       // ran at baseline, not now
	Value         float64 `json:"value"`         // PassingNow / BaselineTests: ranks partial fixes
}

// decide compares a run with the baseline. A patch passes only if the
// command exited 0 and every test that ran at baseline ran again and
// passed. Output alone is never trusted: exit 0 with tests missing fails,
// passing lines with a non-zero exit fail, and no readable results at all
// is "unknown", which never passes. expectFail says a must-fail sentinel
// ran (its results already taken out of cur): the command then had to
// exit non-zero, with the status of failed tests rather than of a timeout,
// a signal or a runner that could not start.
func decide(base, cur *Results, exit int, timedOut, expectFail bool) (verdict event.Verdict, reason string, sc Score) {
	if timedOut {
		return event.Fail, "the test command timed out", sc
	}
	if base == nil {
		return event.Unknown, "no test results could be read from the baseline run; an exit status alone never passes", sc
	}
	if cur == nil && base.Total() > 0 {
		return event.Fail, fmt.Sprintf("none of the %d baseline test(s) ran: the output holds no test results (exit %d)", base.Total(), exit), sc
	}
	if cur == nil {
		if exit == 0 {
			return event.Unknown, "the test command exited 0 but printed no test results; an exit status alone never passes", sc
		}
		return event.Fail, fmt.Sprintf("the test command exited %d and printed no test results", exit), sc
	}
	sc.BaselineTests = base.Total()
	var reasons []string
	if base.Named && cur.Named {
		var missing, broken, still []string
		for name, was := range base.Tests {
			if was == Skipped {
				continue
			}
			now, ok := cur.Tests[name]
			switch {
			case !ok || now == Skipped:
				missing = append(missing, name)
			case now == Passed && was == Failed:
				sc.Fixed++
				sc.PassingNow++
			case now == Passed:
				sc.PassingNow++
			case was == Passed:
				broken = append(broken, name)
			default:
				still = append(still, name)
			}
		}
		sc.Missing, sc.Broken, sc.StillFailing = len(missing), len(broken), len(still)
		if len(missing) > 0 {
			reasons = append(reasons, fmt.Sprintf("%d baseline test(s) did not run or were skipped: %s", len(missing), names(missing)))
		}
		if len(broken) > 0 {
			reasons = append(reasons, fmt.Sprintf("%d test(s) that passed before now fail: %s", len(broken), names(broken)))
		}
		if len(still) > 0 {
			reasons = append(reasons, fmt.Sprintf("%d test(s) still fail: %s", len(still), names(still)))
		}
		if len(reasons) == 0 && cur.Failed > 0 {
			reasons = append(reasons, fmt.Sprintf("%d test(s) fail", cur.Failed))
		}
	} else {
		sc.PassingNow = min(cur.Passed, base.Total())
		if cur.Total() < base.Total() {
			sc.Missing = base.Total() - cur.Total()
			reasons = append(reasons, fmt.Sprintf("%d test(s) ran, %d at baseline", cur.Total(), base.Total()))
		}
		if cur.Failed > 0 {
			reasons = append(reasons, fmt.Sprintf("%d test(s) fail", cur.Failed))
		}
	}
	switch {
	case expectFail && (exit < 1 || exit > 123):
		if exit != 0 { // exit 0 is the sentinels' finding
			reasons = append(reasons, fmt.Sprintf("the test command exited %d", exit))
		}
	case !expectFail && exit != 0:
		reasons = append(reasons, fmt.Sprintf("the test command exited %d", exit))
	}
	if sc.BaselineTests > 0 {
		sc.Value = float64(sc.PassingNow) / float64(sc.BaselineTests)
	}
	if len(reasons) > 0 {
		return event.Fail, strings.Join(reasons, "; "), sc
	}
	if expectFail {
		return event.Pass, fmt.Sprintf("all %d baseline test(s) pass (%d fixed), and the judge's sentinel tests came out as they must", sc.BaselineTests, sc.Fixed), sc
	}
	return event.Pass, fmt.Sprintf("all %d baseline test(s) pass (%d fixed) and the command exited 0", sc.BaselineTests, sc.Fixed), sc
}

func names(n []string) string {
	sort.Strings(n)
	if len(n) > 5 {
		return strings.Join(n[:5], ", ") + fmt.Sprintf(" and %d more", len(n)-5)
	}
	return strings.Join(n, ", ")
}
