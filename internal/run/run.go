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

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/home"
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
	Engine   string   // "command" or "api"
	Agent    []string // the command engine's agent program, run inside each fork's sandbox
	// The api engine: forkbomb's own loop; the key never enters a fork.
	Provider string // "anthropic"
	Model    string
	MaxTurns int
	BaseURL  string
	APIKey   string
	Prompts  []string // one task variant per fork (optional)
	Test     string
	Hidden   []string
	All      bool
	Timeout  time.Duration // per fork
	Parallel int           // agents at once (default: all forks)
	// Limits bound each fork's agent (with the command engine, the agent
	// and everything it starts; with the api engine, each shell command)
	// and each test run judging a fork: a zero field is
	// sandbox.DefaultLimits(Parallel) — a share of the machine per fork at
	// work — and sandbox.Unlimited is none.
	Limits sandbox.Limits
	// Prices in dollars per million tokens, for cost accounting (0: none).
	PriceIn, PriceOut float64
	Progress          io.Writer
}

// Race runs the race and returns its record.
func Race(ctx context.Context, o Options) (*record.Run, string, error) {
	if o.Forks <= 0 {
		o.Forks = 4
	}
	switch o.Engine {
	case "command":
		if len(o.Agent) == 0 {
			return nil, "", errors.New("the command engine needs --agent")
		}
	case "api":
		if o.Provider == "" {
			o.Provider = "anthropic"
		}
		if o.Provider != "anthropic" && o.Provider != "openai" {
			return nil, "", fmt.Errorf("provider %q: anthropic or openai", o.Provider)
		}
		if o.APIKey == "" {
			return nil, "", fmt.Errorf("the api engine needs %s_API_KEY in your environment", strings.ToUpper(o.Provider))
		}
		if o.BaseURL != "" {
			if err := engine.CheckEndpoint(o.BaseURL); err != nil {
				return nil, "", err
			}
		}
	default:
		return nil, "", fmt.Errorf("engine %q is not available (command or api)", o.Engine)
	}
	if strings.TrimSpace(o.Test) == "" {
		return nil, "", errors.New("a race needs --test: forks are judged by the tests their patch passes")
	}
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Minute
	}
	o.Limits = o.Limits.Resolve(sandbox.DefaultLimits(atOnce(o.Parallel, o.Forks)))
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
	if err := home.CheckOutside("the runs directory", runsDir, top); err != nil {
		return nil, "", err
	}
	hide, err := forkHidden(runsDir, o.CacheDir, top, o.Hidden)
	if err != nil {
		return nil, "", err
	}

	reclaimInterrupted(o.Store, runsDir)
	id := record.NewID()
	rec, err := record.Create(runsDir, record.Run{
		ID: id, Task: o.Task, Engine: o.Engine, Agent: o.Agent, Model: o.Model, Forks: o.Forks, Test: o.Test,
		Repo: top, Base: base, Started: time.Now().UTC(),
	}, append(secretValues(), o.APIKey))
	if err != nil {
		return nil, "", err
	}
	defer rec.Close()
	rec.Event("run_start", -1, map[string]any{"task": o.Task, "forks": o.Forks, "engine": o.Engine, "base": base, "test": o.Test, "limits": limitsData(o.Limits)})
	prog := newProgress(o.Progress, o.Forks)
	prog.logf("run %s: %d forks of %s at %s", id, o.Forks, top, base[:12])

	pid1 := "run-" + id
	if _, err := o.Store.New(ctx, pid1, workspace.NewOptions{Repo: top, Rev: base}); err != nil {
		rec.Update(func(r *record.Run) { r.Status = "failed" })
		return nil, "", err
	}
	defer func() {
		// The forks are gone by now; a lingering lock (a judge run winding
		// down) gets a moment before the pid 1 is left for the next
		// run's reclaim.
		for i := 0; i < 20; i++ {
			if err := o.Store.Remove(pid1); err == nil || errors.Is(err, workspace.ErrNotFound) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	jo := judge.Options{Store: o.Store, CacheDir: o.CacheDir, Repo: top, Rev: base, Test: o.Test, Hidden: o.Hidden, Hide: []string{runsDir}}
	jo.Limits = o.Limits // a fork's test runs get the share its agent got
	// The judge (its pid 1 and baseline) is readied while the agents work;
	// every verdict waits for it.
	judgerDone := make(chan struct{})
	var judger *judge.Judger
	var judgerErr error
	go func() {
		judger, judgerErr = judge.Prepare(ctx, jo)
		close(judgerDone)
	}()
	waitJudger := func() (*judge.Judger, error) {
		<-judgerDone
		return judger, judgerErr
	}

	race := &race{o: o, hide: hide, rec: rec, waitJudger: waitJudger, results: make([]record.Fork, o.Forks), winner: -1, prog: prog}
	forkCtx := make([]context.CancelFunc, o.Forks)
	race.cancel = forkCtx
	if o.Parallel <= 0 || o.Parallel > o.Forks {
		o.Parallel = o.Forks
	}
	slots := make(chan struct{}, o.Parallel)
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
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
			case <-fctx.Done():
				race.setFork(n, func(f *record.Fork) { f.State = "killed" })
				return
			}
			race.fork(fctx, n, name)
		}()
	}
	wg.Wait()
	for _, c := range forkCtx {
		c()
	}

	if o.All && race.winner >= 0 {
		race.rec.Event("winner", race.winner, map[string]any{"reason": "best score of all forks"})
		prog.logf("winner: fork %d (best of all)", race.winner)
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
		r.TokensIn, r.TokensOut = race.tokensIn, race.tokensOut
		for _, f := range race.results {
			r.CostMicroUSD += f.CostMicroUSD
		}
		final = *r
	})
	return &final, rec.Dir, nil
}

// forkHidden lists what no agent may see, wherever the user keeps it: the
// runs (other runs' patches and verdicts), the judge's caches (baselines),
// the hidden tests, and the user's repository outside the fork. The store
// adds the workspaces (a sibling's upper layer) and the state home. A path
// that cannot be hidden (a system folder) refuses the race rather than
// show it.
func forkHidden(runsDir, cacheDir, repo string, hidden []string) ([]string, error) {
	out := []string{runsDir, repo}
	if cacheDir != "" {
		out = append(out, cacheDir)
	}
	out = append(out, hidden...)
	for i, p := range out {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("hide %s from the forks: %w", p, err)
		}
		if err := sandbox.CheckHide(abs); err != nil {
			return nil, fmt.Errorf("%s cannot be hidden from the forks: %w", p, err)
		}
		out[i] = abs
	}
	return out, nil
}

// race is the shared state of one race's forks.
type race struct {
	o          Options
	hide       []string // what no agent may see (forkHidden)
	rec        *record.Recorder
	prog       *progress
	waitJudger func() (*judge.Judger, error)
	cancel     []context.CancelFunc

	mu        sync.Mutex
	results   []record.Fork
	tokensIn  int64
	tokensOut int64
	winner    int
	patch     map[int][]byte
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
	r.prog.update(n, func(l *forkLine) { l.state = "working" })
	var log bytes.Buffer
	start := time.Now()
	var res *sandbox.Result
	var err error
	limit := "" // the resource limit that ended the agent, for a person
	if r.o.Engine == "api" {
		res, err = r.apiAgent(ctx, n, name, task, &log)
	} else {
		agent := r.limited(sandbox.Policy{
			Command:    r.o.Agent,
			Timeout:    r.o.Timeout,
			SetEnv:     []string{"FORKBOMB_TASK=" + task, fmt.Sprintf("FORKBOMB_FORK=%d", n)},
			MaxOutput:  8 << 20,
			Toolchains: true,
			Hide:       r.hide,
		})
		res, err = r.o.Store.Exec(ctx, name, agent, sandbox.Stdio{Stdin: strings.NewReader(task), Stdout: &log, Stderr: &log})
		limit = sandbox.LimitReason(res, agent)
	}
	r.rec.ForkFile(n, "agent.log", log.Bytes())
	state, exit := "exited", 0
	switch {
	case ctx.Err() != nil:
		state = "killed"
	case err != nil:
		state = "crashed"
		fmt.Fprintf(&log, "\nforkbomb: %v\n", ownWords(err))
	case limit != "":
		// A fork bomb or a memory bomb ends this fork's agent only; the
		// record says which limit, and its patch is still judged.
		state, exit = "failed", res.ExitCode
	case res.TimedOut:
		state, exit = "timed-out", res.ExitCode
	default:
		exit = res.ExitCode
		if exit != 0 {
			state = "crashed"
		}
	}
	r.setFork(n, func(f *record.Fork) { f.State, f.Exit, f.Reason = state, exit, limit })
	exitData := map[string]any{"state": state, "exit": exit, "seconds": time.Since(start).Seconds()}
	if limit != "" {
		exitData["reason"] = limit
	}
	r.rec.Event("fork_exit", n, exitData)
	r.prog.update(n, func(l *forkLine) {
		l.state = fmt.Sprintf("%s (exit %d, %.1fs)", state, exit, time.Since(start).Seconds())
		if limit != "" {
			l.state = fmt.Sprintf("%s: %s (%.1fs)", state, limit, time.Since(start).Seconds())
		}
	})
	if state == "killed" {
		return
	}
	// A crashed or timed-out agent may still have left a useful patch.
	d, err := r.o.Store.Diff(ctx, name, false)
	if errors.Is(err, workspace.ErrPatchRefused) {
		// The fork made something no patch may carry (a file over the
		// limit, a diff past its deadline): it ships nothing, and its
		// verdict says why.
		reason := err.Error()
		r.setFork(n, func(f *record.Fork) { f.Verdict, f.Reason = "fail", reason })
		r.rec.Event("verdict", n, map[string]any{"verdict": "fail", "reason": reason, "score": 0.0, "stripped": []string{}})
		r.prog.update(n, func(l *forkLine) { l.verdict = "fail: " + reason })
		return
	}
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
	judger, err := r.waitJudger()
	if err != nil {
		r.rec.Event("error", n, map[string]any{"error": "judge: " + err.Error()})
		return
	}
	r.rec.Event("judge_start", n, map[string]any{"patch_bytes": len(d.Patch)})
	vs, err := judger.Judge(ctx, [][]byte{d.Patch})
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
	r.prog.update(n, func(l *forkLine) { l.verdict = v.Verdict + ": " + v.Reason })
	r.setFork(n, func(f *record.Fork) {
		f.Verdict, f.Score = v.Verdict, v.Score.Value
		if f.Reason = v.Reason; limit != "" {
			f.Reason = limit + "; its patch: " + v.Reason
		}
	})
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
	r.prog.logf("winner: fork %d", n) // lock order: r.mu, then the progress lock
	for i, cancel := range r.cancel {
		if i != n && r.results[i].Verdict == "" { // still working, or being judged
			r.rec.Event("kill", i, nil)
			cancel()
		}
	}
}

// apiAgent runs forkbomb's own tool loop for fork n: the model's shell
// commands run one by one in the fork's sandbox, its edits in-process.
func (r *race) apiAgent(ctx context.Context, n int, name, task string, log *bytes.Buffer) (*sandbox.Result, error) {
	root, layers, err := r.o.Store.Layers(name)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	var logMu sync.Mutex
	cfg := engine.Config{
		BaseURL: r.o.BaseURL, APIKey: r.o.APIKey, Model: r.o.Model, MaxTurns: r.o.MaxTurns,
		System: "You are a coding agent working in a repository. Use the shell and editor tools to complete the task, then stop. The repository's tests decide whether your work is kept.",
		Root:   root, Tree: engine.Tree{Layers: layers},
		Shell: func(ctx context.Context, command string) string {
			var out bytes.Buffer
			// Each command gets the fork's limits; the commands run one at
			// a time and nothing of one outlives it (its pid namespace),
			// so they bound the fork's agent at every moment.
			p := r.limited(sandbox.Policy{
				Command: []string{"/bin/sh", "-c", command}, Timeout: 5 * time.Minute,
				MaxOutput: 64 << 10, Toolchains: true, Hide: r.hide,
			})
			res, err := r.o.Store.Exec(ctx, name, p, sandbox.Stdio{Stdout: &out, Stderr: &out})
			switch {
			case err != nil:
				return fmt.Sprintf("%s\n(could not run: %v)", out.String(), err)
			case res.TimedOut:
				return out.String() + "\n(timed out; every process of the command was killed)"
			case res.Limit == "output":
				return out.String() + "\n(output over 64 KiB; the command was killed)"
			case res.Limit != "":
				why := sandbox.LimitReason(res, p)
				r.rec.Event("limit", n, map[string]any{"reason": why, "command": command})
				return out.String() + "\n(" + why + "; every process of the command was killed)"
			}
			return fmt.Sprintf("%s\n(exit %d)", out.String(), res.ExitCode)
		},
		Event: func(typ string, data map[string]any) {
			r.rec.Event(typ, n, data)
			switch typ {
			case "model_response":
				r.prog.update(n, func(l *forkLine) { l.turns++ })
			case "tool_call":
				in := fmt.Sprint(data["input"])
				if raw, ok := data["input"].(json.RawMessage); ok {
					in = string(raw)
				}
				r.prog.update(n, func(l *forkLine) { l.tool = fmt.Sprintf("%s %.60s", data["tool"], in) })
			}
			logMu.Lock()
			defer logMu.Unlock()
			if typ == "tool_call" {
				fmt.Fprintf(log, "> %s %s\n", data["tool"], data["input"])
			}
			if typ == "tool_result" {
				fmt.Fprintf(log, "%s\n", data["output"])
			}
		},
	}
	loop := engine.RunAnthropic
	if r.o.Provider == "openai" {
		loop = engine.RunOpenAI
	}
	res, err := loop(ctx, cfg, task)
	if res != nil {
		r.mu.Lock()
		r.tokensIn += res.TokensIn
		r.tokensOut += res.TokensOut
		r.results[n].TokensIn, r.results[n].TokensOut = res.TokensIn, res.TokensOut
		// dollars per million tokens = micro-dollars per token
		r.results[n].CostMicroUSD = int64(float64(res.TokensIn)*r.o.PriceIn + float64(res.TokensOut)*r.o.PriceOut)
		r.mu.Unlock()
		fmt.Fprintf(log, "(%d turns, stop: %s, %d tokens in, %d out)\n", res.Turns, res.Stop, res.TokensIn, res.TokensOut)
	}
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return &sandbox.Result{TimedOut: true, ExitCode: sandbox.ExitTimeout}, nil
	case err != nil:
		return nil, err
	}
	return &sandbox.Result{}, nil
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

// reclaimInterrupted removes the workspaces of runs whose forkbomb was
// killed (their record reads "interrupted"): forks first, then pid 1.
func reclaimInterrupted(s *workspace.Store, runsDir string) {
	all, err := s.List()
	if err != nil {
		return
	}
	var pid1s []string
	for _, m := range all {
		id, ok := strings.CutPrefix(m.Pid1, "run-")
		if !ok {
			continue
		}
		// only a run whose record says its forkbomb is gone: a run
		// recorded elsewhere (another --runs-dir) may be alive
		if r, err := record.Load(runsDir, id); err != nil || r.Status != "interrupted" {
			continue
		}
		if m.Kind == "pid1" {
			pid1s = append(pid1s, m.Name)
		} else {
			s.Remove(m.Name)
		}
	}
	for _, p := range pid1s {
		s.Remove(p)
	}
}

// limited gives p the race's resource limits.
func (r *race) limited(p sandbox.Policy) sandbox.Policy {
	r.o.Limits.Apply(&p)
	return p
}

// atOnce is how many forks work at the same time: parallel, at most forks.
func atOnce(parallel, forks int) int {
	if parallel <= 0 || parallel > forks {
		return forks
	}
	return parallel
}

// limitsData is the record's view of the limits (0: none).
func limitsData(l sandbox.Limits) map[string]any {
	return map[string]any{"memory": max(l.Memory, 0), "pids": max(l.Pids, 0), "cpus": max(l.CPUs, 0), "text": l.String()}
}
