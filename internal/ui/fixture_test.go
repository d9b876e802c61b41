package ui

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/record"
)

// inject is markup a model could write; each piece, if it ever ran, would
// set window.__pwned (the browser test checks it stays undefined).
const inject = `<script>window.__pwned="script"</script><img src=x onerror="window.__pwned='img'">` +
	`<a id="jslink" href="javascript:window.__pwned='link'">click me</a><svg onload="window.__pwned='svg'"></svg>`

// hostileEvents is a finished two-fork race whose model and tools wrote
// markup everywhere a string goes, and whose fork 1 tried to escape.
func hostileEvents() []event.Event {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	big := strings.Repeat("line of output\n", 1000) + "THE-END-OF-BIG-OUTPUT"
	input := func(in map[string]string) event.JSON {
		b, _ := json.Marshal(in)
		return b
	}
	port := 443
	return []event.Event{
		{Fork: event.RunLevel, Time: at(0), Data: event.RunStartData{ID: "x", Task: "fix it " + inject, Forks: 2, Engine: "api"}},
		{Fork: 0, Time: at(1), Data: event.ForkStartData{Workspace: "w0"}},
		{Fork: 1, Time: at(1), Data: event.ForkStartData{Workspace: "w1"}},
		{Fork: 0, Time: at(2), Data: event.ModelResponseData{Turn: 1, Text: "I will fix it. " + inject, InputTokens: 100, OutputTokens: 20}},
		{Fork: 0, Time: at(3), Data: event.ToolCallData{Turn: 1, Tool: "shell", Input: input(map[string]string{"command": "cat lib.sh; echo '" + inject + "'"})}},
		{Fork: 0, Time: at(4), Data: event.ToolResultData{Turn: 1, Tool: "shell", Output: inject + "\n" + big}},
		{Fork: 1, Time: at(4), Data: event.ToolCallData{Turn: 1, Tool: "shell", Input: input(map[string]string{"command": "cat ~/.ssh/id_rsa; echo pwned > /etc/x"})}},
		{Fork: 1, Time: at(5), Data: event.ToolResultData{Turn: 1, Tool: "shell", Output: "cat: /root/.ssh/id_rsa: No such file or directory\nsh: /etc/x: Read-only file system"}},
		{Fork: 1, Time: at(5), Data: event.ToolCallData{Turn: 2, Tool: "editor", Input: input(map[string]string{"command": "create", "path": "../escaped.txt"})}},
		{Fork: 1, Time: at(6), Data: event.ToolResultData{Turn: 2, Tool: "editor", Error: true, Output: "path ../escaped.txt is outside the fork"}},
		{Fork: 1, Time: at(6), Data: event.NetConnectData{Host: "evil.example", Port: &port, Allowed: false, Reason: "not the model host"}},
		{Fork: 1, Time: at(7), Data: somethingNew{Note: inject}},
		{Fork: 0, Time: at(8), Data: event.ForkExitData{State: event.ForkExited}},
		{Fork: 1, Time: at(8), Data: event.ForkExitData{State: event.ForkExited}},
		{Fork: 1, Time: at(9), Data: event.JudgeStartData{PatchBytes: 10}},
		{Fork: 1, Time: at(10), Data: event.VerdictData{Verdict: event.Fail, Reason: "tests failed: TestAdd " + inject}},
		{Fork: 0, Time: at(10), Data: event.JudgeStartData{PatchBytes: 10}},
		{Fork: 0, Time: at(12), Data: event.VerdictData{Verdict: event.Pass, Reason: "1 passed", Score: 1}},
		{Fork: 0, Time: at(12), Data: event.WinnerData{Reason: "first pass"}},
		{Fork: event.RunLevel, Time: at(13), Data: event.RunEndData{Status: event.RunWon, Winner: 0}},
	}
}

// somethingNew is a kind of event this build of the page does not know,
// as a later forkbomb's record may hold.
type somethingNew struct {
	Note string `json:"note"`
}

func (somethingNew) Kind() event.Kind { return "something_new" }

const winnerPatch = "diff --git a/lib.sh b/lib.sh\n--- a/lib.sh\n+++ b/lib.sh\n@@ -1 +1 @@\n-add() { echo $(($1 - $2)); }\n+add() { echo $(($1 + $2)); } # " + inject + "\n"

// writeRun records evs as a finished run with the real recorder and
// returns its id.
func writeRun(t *testing.T, runs string, evs []event.Event) string {
	t.Helper()
	zero := 0
	return writeRunAs(t, runs, evs, func(r *record.Run) {
		r.Status, r.Winner, r.Seconds = event.RunWon, &zero, 13
		r.Fork = []record.Fork{{N: 0, State: event.ForkExited, Verdict: event.Pass, Score: 1}, {N: 1, State: event.ForkExited, Verdict: event.Fail, Reason: "tests failed"}}
	})
}

// writeRunAs records evs as a finished run whose run.json end says.
func writeRunAs(t *testing.T, runs string, evs []event.Event, end func(*record.Run)) string {
	t.Helper()
	id := record.NewID()
	rec, err := record.Create(runs, record.Run{ID: id, Task: "fix it " + inject, Engine: "api", Model: "scripted", Forks: 2, Test: "sh check.sh", Repo: "/repo", Base: strings.Repeat("ab", 20), Started: evs[0].Time}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if err := rec.Handle(ev); err != nil {
			t.Fatal(err)
		}
	}
	for n, p := range []string{winnerPatch, "diff --git a/check.sh b/check.sh\n"} {
		if err := rec.ForkFile(n, "patch", []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.File("winner.patch", []byte(winnerPatch)); err != nil {
		t.Fatal(err)
	}
	if err := rec.Update(end); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	return id
}

// reviewEvents is hostileEvents ended the other way: fork 0's patch
// passed the tests but holds code that detects a test run, so nothing was
// crowned and the run needs review. Its finding carries markup too.
func reviewEvents() []event.Event {
	evs := hostileEvents()
	out := evs[:0:0]
	for _, ev := range evs {
		switch {
		case ev.Kind() == event.Winner:
			continue
		case ev.Kind() == event.VerdictGiven && ev.Fork == 0:
			ev.Data = event.VerdictData{Verdict: event.Review, Reason: "needs review: the tests pass, but the patch adds code that detects or inspects a test run", Score: 1,
				Findings: []string{"lib.go:3: testing.Testing() call (go-testing-mode) " + inject},
				Warnings: []string{"the untouched base, run with the sentinels, got these wrong too " + inject}}
		case ev.Kind() == event.RunEnd:
			ev.Data = event.RunEndData{Status: event.RunNeedsReview, Winner: -1, Review: []int{0}}
		}
		out = append(out, ev)
	}
	return out
}

// unverifiedEvents: the hostile race, but fork 0's pass is not crowned —
// the verifier found its tests too weak, with a survivor whose text comes
// from the fork's patch (a script to keep inert).
func unverifiedEvents() []event.Event {
	var out []event.Event
	for _, ev := range hostileEvents() {
		switch ev.Kind() {
		case event.Winner:
			continue
		case event.RunEnd:
			ev.Data = event.RunEndData{Status: event.RunUnverified, Winner: -1}
		}
		out = append(out, ev)
		if ev.Kind() == event.VerdictGiven && ev.Fork == 0 {
			out = append(out, event.Event{Fork: 0, Time: ev.Time, Data: event.VerifiedData{
				Mutants: 3, Judged: 3, Caught: 2, Seconds: 3.4, MinStrength: 0.8, Unverified: true,
				Survivors: []event.Survivor{{File: "grade.go", Line: 5, Operator: "CONDITIONALS_BOUNDARY", Original: ">= " + inject, Replacement: ">"}},
			}})
		}
	}
	return out
}

// comparedEvents: the hostile race, but fork 1 passes too and the two
// were compared on each other's tests — fork 1 fails fork 0's test, and
// fork 1's test catches a survivor of fork 0's patch. Test names, notes
// and survivors come from forks' patches: markup to keep inert.
func comparedEvents() []event.Event {
	var out []event.Event
	for _, ev := range hostileEvents() {
		switch {
		case ev.Kind() == event.VerdictGiven && ev.Fork == 1:
			ev.Data = event.VerdictData{Verdict: event.Pass, Reason: "1 passed", Score: 1}
		case ev.Kind() == event.RunEnd:
			out = append(out, event.Event{Fork: event.RunLevel, Time: ev.Time, Data: comparedData()})
		}
		out = append(out, ev)
	}
	return out
}

func comparedData() event.ComparedData {
	return event.ComparedData{
		Forks:         []int{0, 1},
		Disagreements: []event.Disagreement{{Tests: 0, Fails: 1, Test: "grade.TestBoundary " + inject, File: "boundary_test.go", Line: 5}},
		Pinned: []event.CrossSurvivor{{Fork: 0, CaughtBy: []string{"grade.TestFail"},
			Survivor: event.Survivor{File: "grade.go", Line: 7, Operator: "RETURN_VALUE", Original: `"fail"`, Replacement: `""`}}},
		Notes:   []string{"fork 1's " + inject + " is left out of its tests"},
		Seconds: 2.5,
	}
}
