package ui

import (
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
	return []event.Event{
		{Kind: event.RunStart, Fork: event.RunLevel, Time: at(0), Data: map[string]any{"id": "x", "task": "fix it " + inject, "forks": 2, "engine": "api"}},
		{Kind: event.ForkStart, Fork: 0, Time: at(1), Data: map[string]any{"workspace": "w0"}},
		{Kind: event.ForkStart, Fork: 1, Time: at(1), Data: map[string]any{"workspace": "w1"}},
		{Kind: event.ModelResponse, Fork: 0, Time: at(2), Data: map[string]any{"turn": 1, "text": "I will fix it. " + inject, "input_tokens": 100, "output_tokens": 20}},
		{Kind: event.ToolCall, Fork: 0, Time: at(3), Data: map[string]any{"turn": 1, "tool": "shell", "input": map[string]any{"command": "cat lib.sh; echo '" + inject + "'"}}},
		{Kind: event.ToolResult, Fork: 0, Time: at(4), Data: map[string]any{"turn": 1, "tool": "shell", "output": inject + "\n" + big}},
		{Kind: event.ToolCall, Fork: 1, Time: at(4), Data: map[string]any{"turn": 1, "tool": "shell", "input": map[string]any{"command": "cat ~/.ssh/id_rsa; echo pwned > /etc/x"}}},
		{Kind: event.ToolResult, Fork: 1, Time: at(5), Data: map[string]any{"turn": 1, "tool": "shell", "output": "cat: /root/.ssh/id_rsa: No such file or directory\nsh: /etc/x: Read-only file system"}},
		{Kind: event.ToolCall, Fork: 1, Time: at(5), Data: map[string]any{"turn": 2, "tool": "editor", "input": map[string]any{"command": "create", "path": "../escaped.txt"}}},
		{Kind: event.ToolResult, Fork: 1, Time: at(6), Data: map[string]any{"turn": 2, "tool": "editor", "error": true, "output": "path ../escaped.txt is outside the fork"}},
		{Kind: "net_connect", Fork: 1, Time: at(6), Data: map[string]any{"host": "evil.example", "port": 443, "allowed": false, "reason": "not the model host"}},
		{Kind: "something_new", Fork: 1, Time: at(7), Data: map[string]any{"note": inject}},
		{Kind: event.ForkExit, Fork: 0, Time: at(8), Data: map[string]any{"state": "exited", "exit": 0}},
		{Kind: event.ForkExit, Fork: 1, Time: at(8), Data: map[string]any{"state": "exited", "exit": 0}},
		{Kind: event.JudgeStart, Fork: 1, Time: at(9), Data: map[string]any{"patch_bytes": 10}},
		{Kind: event.VerdictGiven, Fork: 1, Time: at(10), Data: map[string]any{"verdict": "fail", "reason": "tests failed: TestAdd " + inject, "score": 0}},
		{Kind: event.JudgeStart, Fork: 0, Time: at(10), Data: map[string]any{"patch_bytes": 10}},
		{Kind: event.VerdictGiven, Fork: 0, Time: at(12), Data: map[string]any{"verdict": "pass", "reason": "1 passed", "score": 1}},
		{Kind: event.Winner, Fork: 0, Time: at(12), Data: map[string]any{"reason": "first pass"}},
		{Kind: event.RunEnd, Fork: event.RunLevel, Time: at(13), Data: map[string]any{"status": "won", "winner": 0}},
	}
}

const winnerPatch = "diff --git a/lib.sh b/lib.sh\n--- a/lib.sh\n+++ b/lib.sh\n@@ -1 +1 @@\n-add() { echo $(($1 - $2)); }\n+add() { echo $(($1 + $2)); } # " + inject + "\n"

// writeRun records evs as a finished run with the real recorder and
// returns its id.
func writeRun(t *testing.T, runs string, evs []event.Event) string {
	t.Helper()
	zero := 0
	return writeRunAs(t, runs, evs, func(r *record.Run) {
		r.Status, r.Winner, r.Seconds = event.RunWon, &zero, 13
		r.Fork = []record.Fork{{N: 0, State: "exited", Verdict: "pass", Score: 1}, {N: 1, State: "exited", Verdict: "fail", Reason: "tests failed"}}
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
		case ev.Kind == event.Winner:
			continue
		case ev.Kind == event.VerdictGiven && ev.Fork == 0:
			ev.Data = map[string]any{"verdict": "review", "reason": "needs review: the tests pass, but the patch adds code that detects or inspects a test run", "score": 1,
				"findings": []string{"lib.go:3: testing.Testing() call (go-testing-mode) " + inject}}
		case ev.Kind == event.RunEnd:
			ev.Data = map[string]any{"status": "needs-review", "winner": -1, "review": []int{0}}
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
		switch {
		case ev.Kind == event.Winner:
			continue
		case ev.Kind == event.RunEnd:
			ev.Data = map[string]any{"status": "unverified", "winner": -1}
		}
		out = append(out, ev)
		if ev.Kind == event.VerdictGiven && ev.Fork == 0 {
			out = append(out, event.Event{Kind: event.Verified, Fork: 0, Time: ev.Time, Data: map[string]any{
				"mutants": 3, "judged": 3, "caught": 2, "seconds": 3.4, "min_strength": 0.8, "unverified": true,
				"survivors": []map[string]any{{"file": "grade.go", "line": 5, "operator": "CONDITIONALS_BOUNDARY", "original": ">= " + inject, "replacement": ">"}},
			}})
		}
	}
	return out
}
