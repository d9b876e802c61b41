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
	agent, err := engine.New("api", engine.Settings{BaseURL: srv.URL, APIKey: key, Model: "scripted", MaxTurns: 8})
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
