package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
)

// TestJudgePrintable: what 'forkbomb judge' prints of a verdict — the
// reason (it names tests the code under test chose), the warnings (they
// quote them too), the findings and stripped paths (the patch's) — reaches
// the terminal escaped, and each warning once.
func TestJudgePrintable(t *testing.T) {
	t.Parallel()
	evil := "x\x1b[2J\rp.diff: pass — forged\x07\xff"
	vs := []*judge.Verdict{
		{Verdict: event.Fail, Reason: "1 test(s) still fail: " + evil, Stripped: []string{"test/" + evil},
			Findings: []judge.Finding{{File: "lib/" + evil, Line: 3, Construct: "c", Rule: "r"}}, Warnings: []string{"w " + evil}},
		{Verdict: event.Fail, Reason: "r", Warnings: []string{"w " + evil}},
	}
	var out, errs bytes.Buffer
	printVerdicts(&out, []string{"a.diff", "b.diff"}, vs)
	printJudgeWarnings(&errs, vs)
	for name, text := range map[string]string{"verdicts": out.String(), "warnings": errs.String()} {
		if strings.ContainsAny(text, "\x1b\r\x07") || strings.Contains(text, "\xff") {
			t.Errorf("%s: a terminal would obey:\n%q", name, text)
		}
	}
	if got := strings.Count(out.String(), `x\x1b[2J\rp.diff: pass — forged\a\xff`); got != 3 {
		t.Errorf("the reason, the stripped path and the finding are not all shown escaped (%d):\n%s", got, out.String())
	}
	if got := strings.Count(errs.String(), "forkbomb judge: warning: "); got != 1 {
		t.Errorf("the shared warning was printed %d times, want once:\n%s", got, errs.String())
	}
}
