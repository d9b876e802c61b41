// Package run is the race: one task, N forks of a pid 1, an agent in
// each, every fork judged by its patch as soon as its agent stops, the
// first passing fork the winner (or, with All, the best score), the rest
// killed, and everything recorded.
package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/record"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// Options are a race's inputs.
type Options struct {
	Store    *workspace.Store
	RunsDir  string
	CacheDir string
	Repo     string
	Rev      string
	Task     string
	Forks    int
	Engine   string   // "command"
	Agent    []string // the command engine's agent program, run inside each fork's sandbox
	Prompts  []string // one task variant per fork (optional)
	Test     string
	Hidden   []string
	All      bool
	Timeout  time.Duration // per fork
	Progress io.Writer
}

// Race runs the race and returns its record.
func Race(ctx context.Context, o Options) (*record.Run, string, error) {
	if o.Forks <= 0 {
		o.Forks = 4
	}
	if o.Engine != "command" {
		return nil, "", fmt.Errorf("engine %q is not available yet (use --engine command)", o.Engine)
	}
	if len(o.Agent) == 0 {
		return nil, "", errors.New("the command engine needs --agent")
	}
	if strings.TrimSpace(o.Test) == "" {
		return nil, "", errors.New("a race needs --test: forks are judged by the tests their patch passes")
	}
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Minute
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	top, base, err := workspace.ResolveBase(ctx, o.Repo, o.Rev)
	if err != nil {
		return nil, "", err
	}
	runsDir, err := filepath.Abs(o.RunsDir)
	if err != nil {
		return nil, "", err
	}
	if c, err := canonicalExisting(runsDir); err == nil && (c == top || strings.HasPrefix(c, top+"/")) {
		return nil, "", fmt.Errorf("the runs directory %s is inside the repository %s; use --runs-dir elsewhere", runsDir, top)
	}

	id := record.NewID()
	rec, err := record.Create(runsDir, record.Run{
		ID: id, Task: o.Task, Engine: o.Engine, Agent: o.Agent, Forks: o.Forks, Test: o.Test,
		Repo: top, Base: base, Started: time.Now().UTC(),
	}, secretValues())
	if err != nil {
		return nil, "", err
	}
	defer rec.Close()
	rec.Event("run_start", -1, map[string]any{"task": o.Task, "forks": o.Forks, "engine": o.Engine, "base": base, "test": o.Test})
	fmt.Fprintf(o.Progress, "run %s: %d forks of %s at %s\n", id, o.Forks, top, base[:12])

	pid1 := "run-" + id
	if _, err := o.Store.New(ctx, pid1, workspace.NewOptions{Repo: top, Rev: base}); err != nil {
		rec.Update(func(r *record.Run) { r.Status = "failed" })
		return nil, "", err
	}
	defer o.Store.Remove(pid1)

	jo := judge.Options{Store: o.Store, CacheDir: o.CacheDir, Repo: top, Rev: base, Test: o.Test, Hidden: o.Hidden}
	// The baseline runs while the agents work; every verdict waits for it.
	baselineDone := make(chan error, 1)
	go func() {
		_, err := judge.Judge(ctx, jo, nil)
		baselineDone <- err
	}()
	var baselineErr error
	var baselineOnce sync.Once
	waitBaseline := func() error {
		baselineOnce.Do(func() { baselineErr = <-baselineDone })
		return baselineErr
	}

	race := &race{o: o, rec: rec, jo: jo, waitBaseline: waitBaseline, results: make([]record.Fork, o.Forks), winner: -1}
	forkCtx := make([]context.CancelFunc, o.Forks)
	race.cancel = forkCtx
	var wg sync.WaitGroup
	for n := 0; n < o.Forks; n++ {
		name := fmt.Sprintf("%s-f%d", pid1, n)
		if _, err := o.Store.Fork(ctx, pid1, name); err != nil {
			return nil, "", err
		}
		fctx, cancel := context.WithCancel(ctx)
		forkCtx[n] = cancel
		race.results[n] = record.Fork{N: n, State: "running"}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer o.Store.Remove(name)
			race.fork(fctx, n, name)
		}()
	}
	wg.Wait()
	for _, c := range forkCtx {
		c()
	}

	status := "no-winner"
	if race.winner >= 0 {
		status = "won"
	}
	if ctx.Err() != nil {
		status = "interrupted"
	}
	if race.winner >= 0 {
		rec.File("winner.patch", race.patches(race.winner))
	}
	rec.Event("run_end", -1, map[string]any{"status": status, "winner": race.winner})
	var final record.Run
	rec.Update(func(r *record.Run) {
		r.Status = status
		if race.winner >= 0 {
			w := race.winner
			r.Winner = &w
		}
		r.Ended = time.Now().UTC()
		r.Seconds = r.Ended.Sub(r.Started).Seconds()
		r.Fork = race.results
		final = *r
	})
	return &final, rec.Dir, nil
}

// race is the shared state of one race's forks.
type race struct {
	o            Options
	rec          *record.Recorder
	jo           judge.Options
	waitBaseline func() error
	cancel       []context.CancelFunc

	mu      sync.Mutex
	results []record.Fork
	winner  int
	patch   map[int][]byte
}

func (r *race) patches(n int) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.patch[n]
}

// fork drives one agent, then judges its patch.
func (r *race) fork(ctx context.Context, n int, name string) {
	task := r.o.Task
	if len(r.o.Prompts) > 0 {
		task = r.o.Prompts[n%len(r.o.Prompts)] + "\n\n" + r.o.Task
	}
	r.rec.Event("fork_start", n, map[string]any{"workspace": name})
	fmt.Fprintf(r.o.Progress, "fork %d: started\n", n)
	var log bytes.Buffer
	start := time.Now()
	res, err := r.o.Store.Exec(ctx, name, sandbox.Policy{
		Command:    r.o.Agent,
		Timeout:    r.o.Timeout,
		SetEnv:     []string{"FORKBOMB_TASK=" + task, fmt.Sprintf("FORKBOMB_FORK=%d", n)},
		MaxOutput:  8 << 20,
		Toolchains: true,
	}, sandbox.Stdio{Stdin: strings.NewReader(task), Stdout: &log, Stderr: &log})
	r.rec.ForkFile(n, "agent.log", log.Bytes())
	state, exit := "exited", 0
	switch {
	case ctx.Err() != nil:
		state = "killed"
	case err != nil:
		state = "crashed"
		fmt.Fprintf(&log, "\nforkbomb: %v\n", err)
	case res.TimedOut:
		state, exit = "timed-out", res.ExitCode
	default:
		exit = res.ExitCode
		if exit != 0 {
			state = "crashed"
		}
	}
	r.setFork(n, func(f *record.Fork) { f.State, f.Exit = state, exit })
	r.rec.Event("fork_exit", n, map[string]any{"state": state, "exit": exit, "seconds": time.Since(start).Seconds()})
	fmt.Fprintf(r.o.Progress, "fork %d: %s (exit %d) after %.1fs\n", n, state, exit, time.Since(start).Seconds())
	if state == "killed" {
		return
	}
	// A crashed or timed-out agent may still have left a useful patch.
	d, err := r.o.Store.Diff(ctx, name, false)
	if err != nil {
		r.rec.Event("error", n, map[string]any{"error": err.Error()})
		return
	}
	r.mu.Lock()
	if r.patch == nil {
		r.patch = map[int][]byte{}
	}
	r.patch[n] = d.Patch
	r.mu.Unlock()
	r.rec.ForkFile(n, "patch", d.Patch)
	if err := r.waitBaseline(); err != nil {
		r.rec.Event("error", n, map[string]any{"error": "baseline: " + err.Error()})
		return
	}
	r.rec.Event("judge_start", n, map[string]any{"patch_bytes": len(d.Patch)})
	vs, err := judge.Judge(ctx, r.jo, [][]byte{d.Patch})
	if err != nil || len(vs) != 1 {
		if ctx.Err() != nil {
			r.setFork(n, func(f *record.Fork) { f.State = "killed" })
			return
		}
		r.rec.Event("error", n, map[string]any{"error": fmt.Sprint(err)})
		return
	}
	v := vs[0]
	vj, _ := json.MarshalIndent(v, "", "  ")
	r.rec.ForkFile(n, "verdict.json", vj)
	r.rec.Event("verdict", n, map[string]any{"verdict": v.Verdict, "reason": v.Reason, "score": v.Score.Value, "stripped": v.Stripped})
	fmt.Fprintf(r.o.Progress, "fork %d: %s — %s\n", n, v.Verdict, v.Reason)
	r.setFork(n, func(f *record.Fork) { f.Verdict, f.Reason, f.Score = v.Verdict, v.Reason, v.Score.Value })
	r.decide(n, v)
}

// decide crowns a winner: the first pass, or with All the best score once
// every fork is done (decided by the caller's final pass here: the best
// passing score so far).
func (r *race) decide(n int, v *judge.Verdict) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !v.Pass {
		return
	}
	if r.winner >= 0 && (!r.o.All || r.results[r.winner].Score >= v.Score.Value) {
		return
	}
	r.winner = n
	if r.o.All {
		return
	}
	r.rec.Event("winner", n, map[string]any{"reason": v.Reason})
	fmt.Fprintf(r.o.Progress, "winner: fork %d\n", n)
	for i, cancel := range r.cancel {
		if i != n && r.results[i].State == "running" || i != n && r.results[i].Verdict == "" {
			r.rec.Event("kill", i, nil)
			cancel()
		}
	}
}

func (r *race) setFork(n int, f func(*record.Fork)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.results[n])
}

// secretValues are the credentials in forkbomb's environment, which the
// record must never hold.
func secretValues() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, val, _ := strings.Cut(kv, "=")
		up := strings.ToUpper(name)
		if strings.Contains(up, "KEY") || strings.Contains(up, "TOKEN") || strings.Contains(up, "SECRET") || strings.Contains(up, "PASSW") {
			out = append(out, val)
		}
	}
	return out
}

func canonicalExisting(p string) (string, error) {
	for q := p; ; q = filepath.Dir(q) {
		if c, err := filepath.EvalSymlinks(q); err == nil {
			rel, _ := filepath.Rel(q, p)
			return filepath.Join(c, rel), nil
		}
		if q == "/" {
			return p, nil
		}
	}
}
