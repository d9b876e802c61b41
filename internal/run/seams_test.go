package run_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/record"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// memRace is a race over the memory store, the memory agent and the
// memory judge: no sandbox, no fork on disk, no test run.
func memRace(t *testing.T, store *memStore, agent memAgent, j *memJudge) run.Options {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "lib.sh"), []byte("add() { echo $(($1 - $2)); }\n"), 0o644)
	testutil.Git(t, dir, "init", "-q")
	testutil.Git(t, dir, "add", "-A")
	testutil.Git(t, dir, "commit", "-qm", "base")
	return run.Options{
		Store: store, RunsDir: filepath.Join(t.TempDir(), "runs"), CacheDir: filepath.Join(t.TempDir(), "cache"),
		Repo: dir, Task: "make add add", Forks: 4, Engine: agent, Test: "judged in memory", Timeout: time.Minute,
		Judge: func(context.Context, judge.Options) (run.Judger, error) { return j, nil },
	}
}

// TestRaceSeams races against implementations that are not the on-disk
// ones — a fork store and files in memory, an agent that is no process, a
// judge that runs nothing — so the race depends on its seams only. Fork 0
// fixes the bug through the editor's Files (after forks 1 and 3 are
// judged), fork 1 changes nothing, fork 2 works until it is killed, fork
// 3's engine fails. The record, the progress and a third subscriber each
// see every event, a fork's in order.
func TestRaceSeams(t *testing.T) {
	t.Parallel()
	store := newMemStore(map[string]string{"lib.sh": "add() { echo $(($1 - $2)); }\n"})
	judged := make(chan struct{})
	j := &memJudge{want: "$1 + $2", onJudge: func(n int) {
		if n == 2 {
			close(judged)
		}
	}}
	agent := memAgent{act: func(ctx context.Context, files workspace.Files, task engine.Task) engine.Outcome {
		switch task.Fork {
		case 0:
			task.Emit(event.ModelResponseData{Turn: 1})
			task.Emit(event.ToolCallData{Turn: 1, Tool: "editor", Input: event.JSON(`{"command":"create"}`)})
			select {
			case <-judged:
			case <-ctx.Done():
				return engine.Outcome{State: event.ForkKilled}
			}
			if err := files.Write(ctx, "lib.sh", []byte("add() { echo $(($1 + $2)); }\n"), 0o644); err != nil {
				return engine.Outcome{State: event.ForkCrashed, Err: err}
			}
			fmt.Fprintln(task.Log, "fixed add")
			return engine.Outcome{State: event.ForkExited, Usage: engine.Usage{Turns: 1, TokensIn: 100, TokensOut: 10, CostMicroUSD: 450}}
		case 1:
			return engine.Outcome{State: event.ForkExited}
		case 2:
			<-ctx.Done()
			return engine.Outcome{State: event.ForkKilled}
		}
		return engine.Outcome{State: event.ForkCrashed, Err: errors.New("the agent lost its model")}
	}}
	o := memRace(t, store, agent, j)
	var progress bytes.Buffer
	o.Progress = &progress
	var mu sync.Mutex
	var seen []event.Event
	o.Subscribers = []event.Subscriber{event.SubscriberFunc(func(ev event.Event) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, ev)
		return nil
	})}

	r, dir, err := run.Race(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != event.RunWon || r.Winner == nil || *r.Winner != 0 || r.Engine != "memory" {
		t.Fatalf("status %s winner %v engine %s: %+v", r.Status, r.Winner, r.Engine, r.Fork)
	}
	want := []struct {
		state   event.ForkState
		verdict event.Verdict
	}{{event.ForkExited, event.Pass}, {event.ForkExited, event.Fail}, {event.ForkKilled, ""}, {event.ForkCrashed, event.Fail}}
	for n, w := range want {
		if f := r.Fork[n]; f.State != w.state || f.Verdict != w.verdict {
			t.Errorf("fork %d: %s %s, want %s %s", n, f.State, f.Verdict, w.state, w.verdict)
		}
	}
	if r.TokensIn != 100 || r.TokensOut != 10 || r.CostMicroUSD != 450 || r.Fork[0].TokensIn != 100 {
		t.Errorf("usage: %d in, %d out, %d µ$", r.TokensIn, r.TokensOut, r.CostMicroUSD)
	}
	if log, _ := os.ReadFile(filepath.Join(dir, "forks", "3", "agent.log")); !strings.Contains(string(log), "forkbomb: the agent lost its model") {
		t.Errorf("fork 3's log lacks its engine's error: %q", log)
	}
	if log, _ := os.ReadFile(filepath.Join(dir, "forks", "0", "agent.log")); string(log) != "fixed add\n" {
		t.Errorf("fork 0's log: %q", log)
	}
	if all, _ := store.List(t.Context()); len(all) != 0 {
		t.Errorf("the race left %d workspaces in the store", len(all))
	}

	// The record and the subscriber saw the same events in the same order.
	recorded := readEvents(t, filepath.Join(dir, "events.jsonl"))
	mu.Lock()
	var got []string
	for _, ev := range seen {
		got = append(got, fmt.Sprintf("%d %s", ev.Fork, ev.Kind()))
	}
	mu.Unlock()
	if !slices.Equal(recorded, got) {
		t.Errorf("the record and the subscriber differ:\nrecord:     %v\nsubscriber: %v", recorded, got)
	}
	for _, ev := range []string{"-1 run_start", "0 model_response", "0 tool_call", "0 verdict", "0 winner", "2 kill", "-1 run_end"} {
		if !slices.Contains(recorded, ev) {
			t.Errorf("no %q event: %v", ev, recorded)
		}
	}
	if i, k := slices.Index(recorded, "0 fork_start"), slices.Index(recorded, "0 fork_exit"); i < 0 || k < i {
		t.Errorf("fork 0's events out of order: %v", recorded)
	}
	for _, line := range []string{"winner: fork 0", "1 turns, last: editor {\"command\":\"create\"}", "fork 3: crashed (exit 0,", "fork 0: exited (exit 0, "} {
		if !strings.Contains(progress.String(), line) {
			t.Errorf("the progress lacks %q:\n%s", line, progress.String())
		}
	}
}

// TestRaceRecordFails: the record is the race's memory, so its first write
// error ends the race: every fork is killed, the run is "failed", and Race
// returns the error.
func TestRaceRecordFails(t *testing.T) {
	t.Parallel()
	var runsDir string
	agent := memAgent{act: func(ctx context.Context, files workspace.Files, task engine.Task) engine.Outcome {
		if task.Fork != 0 {
			<-ctx.Done()
			return engine.Outcome{State: event.ForkKilled}
		}
		// Fork 0 takes the record's fork folders away: its log cannot be
		// written.
		runs, _ := filepath.Glob(filepath.Join(runsDir, "*", "forks"))
		for _, f := range runs {
			os.RemoveAll(f)
			os.WriteFile(f, []byte("not a folder"), 0o600)
		}
		return engine.Outcome{State: event.ForkExited}
	}}
	o := memRace(t, newMemStore(map[string]string{"lib.sh": "x\n"}), agent, &memJudge{want: "never"})
	runsDir = o.RunsDir
	r, _, err := run.Race(context.Background(), o)
	if !errors.Is(err, run.ErrRecord) {
		t.Fatalf("Race returned %v, want ErrRecord", err)
	}
	if r == nil || r.Status != event.RunFailed {
		t.Fatalf("run %+v", r)
	}
	for _, f := range r.Fork[1:] {
		if f.State != event.ForkKilled {
			t.Errorf("fork %d: %s, want killed", f.N, f.State)
		}
	}
	if saved, err := record.Load(o.RunsDir, r.ID); err != nil || saved.Status != event.RunFailed {
		t.Errorf("run.json: %v %+v", err, saved)
	}
}

// readEvents returns "FORK KIND" for each line of events.jsonl.
func readEvents(t *testing.T, p string) []string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		var ev record.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("event line %q: %v", sc.Text(), err)
		}
		n := event.RunLevel
		if ev.Fork != nil {
			n = *ev.Fork
		}
		out = append(out, fmt.Sprintf("%d %s", n, ev.Type))
	}
	return out
}
