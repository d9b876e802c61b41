package run_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/record"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// agents: fork 0 fixes the bug honestly (once gate says the others have
// finished), fork 1 rewrites the check, fork 2 works forever, fork 3
// crashes. Without a gate, fork 0 waits 10 s.
func agents(g gate) string {
	return `case $FORKBOMB_FORK in
0) ` + g.wait() + `; sed -i 's/\$1 - \$2/$1 + $2/' lib.sh ;;
1) printf 'echo "1 passed, 0 failed"\n' > check.sh ;;
2) sleep 300 ;;
3) echo "giving up: $FORKBOMB_TASK" >&2; exit 3 ;;
esac`
}

func options(t *testing.T, repoDir string) run.Options {
	s, err := workspace.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	return run.Options{
		Store: s, RunsDir: filepath.Join(t.TempDir(), "runs"), CacheDir: filepath.Join(t.TempDir(), "cache"),
		Repo: repoDir, Task: "make add add", Forks: 4,
		Engine: engine.Command{Argv: []string{"/bin/sh", "-c", agents(gate{})}}, Test: "/bin/sh check.sh", Timeout: time.Minute,
	}
}

// TestRaceFirstPassWins: the honest fork wins, the cheat is rejected with
// its reason, the crash is recorded, the slow fork is killed at once, and
// the record holds every event, each fork's patch and verdict, and no key.
func TestRaceFirstPassWins(t *testing.T) {
	key := "sk-ant-CANARY-" + strings.Repeat("x", 20)
	t.Setenv("ANTHROPIC_API_KEY", key)
	dir := repo(t)
	o := options(t, dir)
	o.Task = "make add add (" + key + ")"
	// The honest fork fixes the bug only once the cheat has its verdict
	// and the crash is recorded, so the winner cuts neither short.
	g := newGate(t)
	o.Engine = engine.Command{Argv: []string{"/bin/sh", "-c", agents(g)}}
	judged := g.openWhen(t, recorded(o.RunsDir, map[int]event.Kind{1: event.VerdictGiven, 3: event.ForkExit}))
	r, recDir, err := run.Race(context.Background(), o)
	judged()
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != event.RunWon || r.Winner == nil || *r.Winner != 0 {
		t.Fatalf("status %s winner %v, want won by fork 0: %+v", r.Status, r.Winner, r.Fork)
	}
	want := map[int]string{1: "fail", 2: "", 3: "fail"}
	for n, v := range want {
		if string(r.Fork[n].Verdict) != v {
			t.Errorf("fork %d verdict %q, want %q (%s)", n, r.Fork[n].Verdict, v, r.Fork[n].Reason)
		}
	}
	if !strings.Contains(r.Fork[1].Reason, "check.sh") {
		t.Errorf("the cheat's reason does not name the stripped file: %s", r.Fork[1].Reason)
	}
	if r.Fork[2].State != event.ForkKilled || r.Fork[3].State != event.ForkCrashed || r.Fork[3].Exit != 3 {
		t.Errorf("states: %+v", r.Fork)
	}
	types := map[event.Kind]int{}
	f, _ := os.Open(filepath.Join(recDir, "events.jsonl"))
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev record.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.V != record.SchemaVersion || ev.Time.IsZero() {
			t.Errorf("bad event line %q: %v", sc.Text(), err)
		}
		types[ev.Type]++
	}
	f.Close()
	for _, typ := range []event.Kind{event.RunStart, event.ForkStart, event.ForkExit, event.JudgeStart, event.VerdictGiven, event.Winner, event.Kill, event.RunEnd} {
		if types[typ] == 0 {
			t.Errorf("no %s event: %v", typ, types)
		}
	}
	for _, p := range []string{"run.json", "winner.patch", "forks/0/patch", "forks/0/verdict.json", "forks/3/agent.log"} {
		if _, err := os.Stat(filepath.Join(recDir, p)); err != nil {
			t.Errorf("record lacks %s", p)
		}
	}
	// control: the task, which holds the key, reached the record (fork 3
	// prints it), so the search below looks where the key would be
	if log3, _ := os.ReadFile(filepath.Join(recDir, "forks/3/agent.log")); !strings.Contains(string(log3), "giving up: make add add ([redacted])") {
		t.Errorf("control: fork 3's log lacks its redacted task: %q", log3)
	}
	filepath.WalkDir(recDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, _ := os.ReadFile(p); strings.Contains(string(data), key) {
				t.Errorf("LEAK: the key is in %s", p)
			}
		}
		return nil
	})
	// the run's workspaces are gone; the record stays
	if all, _ := o.Store.List(t.Context()); len(all) > 1 { // the judge's cached pid 1
		var names []string
		for _, m := range all {
			names = append(names, m.Name)
		}
		t.Errorf("the race left %d workspaces: %v", len(all), names)
	}

	// apply: a new branch with the fix; the current branch and tree untouched
	before := testutil.Git(t, dir, "status", "--porcelain") + testutil.Git(t, dir, "rev-parse", "HEAD")
	patch, _ := os.ReadFile(filepath.Join(recDir, "winner.patch"))
	if _, err := workspace.Apply(context.Background(), dir, r.Base, patch, "forkbomb/"+r.ID, "fix"); err != nil {
		t.Fatal(err)
	}
	if after := testutil.Git(t, dir, "status", "--porcelain") + testutil.Git(t, dir, "rev-parse", "HEAD"); after != before {
		t.Errorf("apply changed the current branch or working tree")
	}
	if got := testutil.Git(t, dir, "show", "forkbomb/"+r.ID+":lib.sh"); !strings.Contains(got, "$1 + $2") {
		t.Errorf("the new branch lacks the fix: %s", got)
	}
	if _, err := workspace.Apply(context.Background(), dir, r.Base, patch, "forkbomb/"+r.ID, "fix"); err == nil {
		t.Errorf("apply overwrote an existing branch")
	}
}

// TestRaceInterrupted: cancelling the race (Ctrl-C) once every agent runs
// kills every fork and records the run as interrupted.
func TestRaceInterrupted(t *testing.T) {
	t.Parallel()
	o := options(t, repo(t))
	o.Engine = engine.Command{Argv: []string{"/bin/sh", "-c", startedAgent}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan int, 1)
	go func() {
		started <- waitStarted(o.Store.(*workspace.Store).Root, o.Forks)
		cancel()
	}()
	r, _, err := run.Race(ctx, o)
	if n := <-started; n != o.Forks {
		t.Fatalf("only %d of %d agents started before the interruption", n, o.Forks)
	}
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != event.RunInterrupted {
		t.Fatalf("status %s, want interrupted", r.Status)
	}
	// killed by the interruption, not ended by the race's minute
	for n, f := range r.Fork {
		if f.State != event.ForkKilled {
			t.Errorf("fork %d: %s, want killed", n, f.State)
		}
	}
	got, _ := record.Load(o.RunsDir, r.ID)
	if got.Status != event.RunInterrupted {
		t.Errorf("run.json says %s", got.Status)
	}
}

// TestRaceSIGKILL: a forkbomb killed with SIGKILL mid-race leaves a run
// that reads as interrupted, and the next race reclaims its workspaces.
func TestRaceSIGKILL(t *testing.T) {
	t.Parallel()
	dir := repo(t)
	state, runs := filepath.Join(t.TempDir(), "state"), filepath.Join(t.TempDir(), "runs")
	// (a volatile overlay of a judged run the kill cut short can be left)
	testutil.OpenOverlayWork(t, state)
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "__race", state, runs, dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s, _ := workspace.Open(state)
	if n := waitStarted(state, 2); n != 2 { // both agents run: the kill lands mid-race
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("only %d of 2 agents started", n)
	}
	// The baseline's judged run (a test that sleeps) is under way too: its
	// fork, leased to the forkbomb killed now, stays behind.
	judged := false
	for deadline := time.Now().Add(2 * time.Minute); !judged && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ms, _ := s.List(t.Context())
		for _, m := range ms {
			judged = judged || strings.HasPrefix(m.Name, "judge-run-") && m.Temp
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !judged {
		t.Fatal("the baseline's judged run never began")
	}
	all, _ := record.List(runs)
	if len(all) != 1 || all[0].Status != event.RunInterrupted {
		t.Fatalf("runs after SIGKILL: %+v", all)
	}
	o := options(t, dir)
	o.Store, o.RunsDir, o.Forks = s, runs, 1
	o.Engine = engine.Command{Argv: []string{"/bin/sh", "-c", "true"}}
	if _, _, err := run.Race(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	left, _ := s.List(t.Context())
	var forks int
	for _, m := range left {
		if strings.HasPrefix(m.Name, "run-"+all[0].ID) || strings.HasPrefix(m.Pid1, "run-"+all[0].ID) {
			t.Errorf("the killed run's workspace %s was not reclaimed", m.Name)
		}
		if m.Kind == workspace.KindFork && strings.HasPrefix(m.Name, "run-") {
			forks++
		}
	}
	if forks != 0 {
		t.Errorf("%d forks of runs left in the store", forks)
	}
	// the judged runs' forks the kill left went too (they were leased to
	// the killed forkbomb): the kept base can be removed — once no process
	// another test starts holds a copy of the race's hold on it (its
	// descriptor, from fork until exec: a loaded machine may delay that
	// exec; seen once in CI)
	for _, m := range left {
		if m.Kind != workspace.KindPid1 {
			continue
		}
		for deadline := time.Now().Add(10 * time.Second); ; {
			err := s.Remove(t.Context(), m.Name)
			if err == nil {
				break
			}
			if !errors.Is(err, workspace.ErrInUse) || time.Now().After(deadline) {
				t.Errorf("rm %s after the next race: %v", m.Name, err)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestRaceAPIEngine: forkbomb's own loop against both protocols (a scripted
// server standing in for the network): the model's edit wins, its shell
// command ran in the sandbox, and its key appears nowhere in the record.
func TestRaceAPIEngine(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"anthropic", "openai"} {
		t.Run(provider, func(t *testing.T) {
			key := "sk-scripted-" + strings.Repeat("k", 24)
			srv, err := engine.StartScripted(key, map[string][]engine.Step{
				"fixer": {
					{Tools: []engine.ToolCall{{Name: "shell", Input: map[string]any{"command": "cat lib.sh; echo $HOME; env | grep -c KEY"}}}},
					{Tools: []engine.ToolCall{{Name: "editor", Input: map[string]any{"command": "str_replace", "path": "lib.sh", "old_str": "$1 - $2", "new_str": "$1 + $2"}}}},
					{Text: "Fixed."},
				},
				"idler": {{Text: "Nothing to do."}},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			o := options(t, repo(t))
			s := engine.Settings{Provider: provider, Model: "scripted", APIKey: key, BaseURL: srv.URL, PriceIn: 3, PriceOut: 15}
			if provider == "openai" {
				s.BaseURL += "/v1"
			}
			if o.Engine, err = engine.New(context.Background(), "api", s); err != nil {
				t.Fatal(err)
			}
			o.Forks, o.All = 2, true
			o.Prompts = []string{"[persona: idler]", "[persona: fixer]"}
			r, dir, err := run.Race(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != event.RunWon || *r.Winner != 1 || r.TokensOut == 0 || r.CostMicroUSD != int64(float64(r.TokensIn)*3+float64(r.TokensOut)*15) {
				t.Fatalf("status %s winner %v tokens %d: %+v", r.Status, r.Winner, r.TokensOut, r.Fork)
			}
			log, _ := os.ReadFile(filepath.Join(dir, "forks", "1", "agent.log"))
			if !strings.Contains(string(log), "add() { echo $(($1 - $2)); }") || !strings.Contains(string(log), "\n0\n") {
				t.Errorf("the shell tool did not run in the fork's sandbox, or saw a key:\n%s", log)
			}
			filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if data, _ := os.ReadFile(p); err == nil && !d.IsDir() && strings.Contains(string(data), key) {
					t.Errorf("LEAK: the key is in %s", p)
				}
				return nil
			})
		})
	}
}
