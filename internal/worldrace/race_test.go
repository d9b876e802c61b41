package worldrace

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/record"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/world"
)

const key = "sk-scripted-world-race-key-0123456789abcdef"

// TestRaceAPI drives forkbomb's api engine against the scripted model server on loopback: each
// branch's agent works through the world's shell, the check runs in a fresh copy, the winner
// is kept as TRUNK.winner, the trunk's bytes do not change, and the run is recorded.
func TestRaceAPI(t *testing.T) {
	srv, err := engine.StartScripted(key, map[string][]engine.Step{
		"solver": {
			{Text: "writing the answer", Tools: []engine.ToolCall{{Name: "shell", Input: map[string]any{"command": "cd /work && n=$(cat question); echo $((n*2)) > answer; cat answer"}}}},
			{Tools: []engine.ToolCall{{Name: "editor", Input: map[string]any{"command": "view", "path": "answer"}}}},
			{Text: "done"},
		},
		"wrong": {
			{Tools: []engine.ToolCall{{Name: "shell", Input: map[string]any{"command": "echo 7 > /work/answer"}}}},
			{Text: "done"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	agent, err := engine.New(context.Background(), "api", engine.Settings{BaseURL: srv.URL, APIKey: key, Model: "scripted", MaxTurns: 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		persona string
		won     bool
	}{{"solver", true}, {"wrong", false}} {
		t.Run(tc.persona, func(t *testing.T) {
			dir := t.TempDir()
			trunk := filepath.Join(dir, "trunk.world")
			w := world.New()
			if err := w.FS.WriteFile("/work/question", []byte("21\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := w.Save(trunk); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(trunk)
			runs := filepath.Join(dir, "runs")
			res, err := Run(context.Background(), Options{Trunk: trunk, Race: run.Options{Forks: 2, Test: "grep -qx 42 /work/answer",
				Task:   "[persona: " + tc.persona + "] double the number in /work/question into /work/answer",
				Engine: agent, RunsDir: runs}})
			if after, _ := os.ReadFile(trunk); !bytes.Equal(before, after) {
				t.Errorf("the trunk changed")
			}
			if res.Run == nil {
				t.Fatalf("no run: %v", err)
			}
			got, lerr := record.Load(runs, res.Run.ID)
			if lerr != nil {
				t.Fatal(lerr)
			}
			events, _ := os.ReadFile(filepath.Join(res.Dir, "events.jsonl"))
			if !bytes.Contains(events, []byte(`"type":"tool_call"`)) || !bytes.Contains(events, []byte(`"type":"verdict"`)) {
				t.Errorf("events: %s", events)
			}
			if bytes.Contains(events, []byte(key)) {
				t.Errorf("the key is in the record")
			}
			if !tc.won {
				if !errors.Is(err, ErrNoWinner) || got.Status != event.RunNoWinner {
					t.Errorf("err %v status %s", err, got.Status)
				}
				if _, err := os.Lstat(trunk + ".winner"); err == nil {
					t.Errorf("a winner file without a winner")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != event.RunWon || got.Winner == nil {
				t.Errorf("run.json: %+v", got)
			}
			won, err := world.Load(trunk+".winner", 0)
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := won.FS.ReadFile("/work/answer"); strings.TrimSpace(string(b)) != "42" {
				t.Errorf("winner's answer %q", b)
			}
			if !bytes.Contains(events, []byte("the shell is the only tool")) {
				t.Errorf("the editor was not refused in the world")
			}
		})
	}
}

// breaker is an engine that runs no model: fork 0 writes the right answer through the world's
// shell, then takes the record's fork folders away (its log cannot be written) and stops; the
// other forks work until they are stopped.
type breaker struct{ runs string }

func (breaker) Info() engine.Info { return engine.Info{Name: "breaker"} }

func (b breaker) Run(ctx context.Context, w engine.Workspace, t engine.Task) engine.Outcome {
	if t.Fork != 0 {
		<-ctx.Done()
		return engine.Outcome{State: event.ForkKilled}
	}
	if _, err := w.Exec(ctx, sandbox.Policy{Command: []string{"/bin/sh", "-c", "echo 42 > /work/answer"}}, sandbox.Stdio{}); err != nil {
		return engine.Outcome{State: event.ForkCrashed, Err: err}
	}
	forks, _ := filepath.Glob(filepath.Join(b.runs, "*", "forks"))
	for _, f := range forks {
		os.RemoveAll(f)
		os.WriteFile(f, []byte("not a folder"), 0o600)
	}
	return engine.Outcome{State: event.ForkExited}
}

// TestRaceRecordFails: a world race's record is the race's memory as any race's is, so its
// first write error ends the race (run.ErrRecord): the other agent is stopped, the run is
// "failed", and the passing answer fork 0 made is neither judged nor kept.
func TestRaceRecordFails(t *testing.T) {
	dir := t.TempDir()
	trunk := filepath.Join(dir, "trunk.world")
	if err := world.New().Save(trunk); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(t.TempDir(), "runs")
	res, err := Run(context.Background(), Options{Trunk: trunk, Race: run.Options{Forks: 2, Test: "grep -qx 42 /work/answer",
		Task: "answer", Engine: breaker{runs: runs}, RunsDir: runs}})
	if !errors.Is(err, run.ErrRecord) {
		t.Fatalf("Run returned %v, want run.ErrRecord", err)
	}
	if res.Run == nil || res.Run.Status != event.RunFailed || res.Run.Winner != nil || res.Run.Fork[0].Verdict != "" || res.Run.Fork[1].State != event.ForkKilled {
		t.Fatalf("run %+v", res.Run)
	}
	if saved, err := record.Load(runs, res.Run.ID); err != nil || saved.Status != event.RunFailed {
		t.Errorf("run.json: %v %+v", err, saved)
	}
	if _, err := os.Lstat(trunk + ".winner"); err == nil || res.File != "" {
		t.Errorf("a winner was kept from a failed race")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".trunk.world.race-*")); len(left) != 0 {
		t.Errorf("worlds left behind: %v", left)
	}
}

// shellAgent is an engine that runs no model: each fork runs its script in its world's shell.
type shellAgent []string

func (shellAgent) Info() engine.Info { return engine.Info{Name: "shell"} }

func (a shellAgent) Run(ctx context.Context, w engine.Workspace, t engine.Task) engine.Outcome {
	if _, err := w.Exec(ctx, sandbox.Policy{Command: []string{"/bin/sh", "-c", a[t.Fork]}}, sandbox.Stdio{}); err != nil {
		return engine.Outcome{State: event.ForkCrashed, Err: err}
	}
	return engine.Outcome{State: event.ForkExited}
}

// TestCheckIsTheTrunks: the check runs with the trunk's shell state and the branch's patch,
// never the branch's shell, so an agent that leaves a function named like the check's command
// (grep that always succeeds) and the wrong answer does not pass; a branch with the right
// answer does (the control). The kept winner is the branch as its agent left it.
func TestCheckIsTheTrunks(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		won          bool
	}{
		{"cheat", "echo 7 > /work/answer; grep() { return 0; }", false},
		{"control", "echo 42 > /work/answer; grep() { return 0; }", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			trunk := filepath.Join(dir, "trunk.world")
			if err := world.New().Save(trunk); err != nil {
				t.Fatal(err)
			}
			res, err := Run(context.Background(), Options{Trunk: trunk, Limits: world.DefaultLimits, Race: run.Options{Forks: 1,
				Test: "grep -qx 42 /work/answer", Task: "answer", Engine: shellAgent{tc.script}, RunsDir: filepath.Join(dir, "runs")}})
			if !tc.won {
				if !errors.Is(err, ErrNoWinner) || res.Run.Fork[0].Verdict != event.Fail {
					t.Fatalf("the branch's shell judged itself: %v %+v", err, res.Run)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			won, err := world.Load(res.File, 0)
			if err != nil {
				t.Fatal(err)
			}
			if r, err := won.Exec(context.Background(), "type grep", nil, world.DefaultLimits); err != nil || !strings.Contains(string(r.Stdout), "function") {
				t.Errorf("the winner is not the branch as its agent left it: %v %s", err, r.Stdout)
			}
		})
	}
}
