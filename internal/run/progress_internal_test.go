package run

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/forkbomb/forkbomb/internal/event"
)

// TestProgressPrintable: what a fork's model and tests wrote — a tool call's input, a
// verdict's reason, a comparison's test name — reaches the progress lines escaped: no
// carriage return, escape sequence or stray byte can redraw the terminal or forge a line.
func TestProgressPrintable(t *testing.T) {
	t.Parallel()
	evil := "x\x1b[2J\rfork 1: passed\x07\xff"
	var out bytes.Buffer
	p := newProgress(&out, 2, false, "race")
	for _, ev := range []event.Event{
		{Fork: 0, Data: event.ForkStartData{}},
		{Fork: 0, Data: event.ToolCallData{Tool: "shell", Input: event.JSON(`"` + evil + `"`)}},
		{Fork: 0, Data: event.VerdictData{Verdict: event.Fail, Reason: evil}},
		{Fork: event.RunLevel, Data: event.ComparedData{Forks: []int{0, 1}, Disagreements: []event.Disagreement{{Tests: 1, Fails: 0, Test: evil}}}},
	} {
		p.Handle(ev)
	}
	text := out.String()
	if !utf8.ValidString(text) || strings.ContainsAny(text, "\x1b\r\x07") {
		t.Fatalf("progress a terminal would obey:\n%q", text)
	}
	if strings.Count(text, `x\x1b[2J\rfork 1: passed\a\xff`) < 2 {
		t.Errorf("the fork's text is not shown, escaped:\n%q", text)
	}
}

// TestProgressJudgeWarnings: the judge's warnings about the judgement (a
// sentinel the base gets wrong too, so left unchecked) are printed once,
// however many verdicts carry them.
func TestProgressJudgeWarnings(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	p := newProgress(&out, 2, false, "race")
	w := "the untouched base, run with the sentinels, got these wrong too, so they are not checked on it: x (must pass) was reported fail"
	for n := range 2 {
		p.Handle(event.Event{Fork: n, Data: event.VerdictData{Verdict: event.Pass, Reason: "ok", Warnings: []string{w}}})
	}
	if got := strings.Count(out.String(), "judge: warning: "+w); got != 1 {
		t.Errorf("the warning was printed %d times, want once:\n%s", got, out.String())
	}
}
