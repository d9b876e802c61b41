// Package worldrace races agents in forks of a world (internal/world): it forks the trunk N
// times, drives an agent in each branch with the world's shell as the tool that acts, runs a
// check in a fresh copy of each finished branch, and keeps the first branch whose check passes
// as TRUNK.winner. The trunk is never written. A race is recorded under runs/ like any race, so
// `forkbomb show` and the web view read it.
package worldrace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/record"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
	"github.com/forkbomb/forkbomb/internal/world"
)

// Options are one race.
type Options struct {
	Trunk   string // the world file; only read
	Forks   int
	Check   string // a shell script run in a fresh copy of each finished branch; status 0 passes
	Prompt  string
	Prompts []string // variants, one per branch in turn, each put before Prompt (optional)
	Agent   engine.Agent
	RunsDir string
	Limits  world.Limits  // per exec, the agent's and the check's
	Timeout time.Duration // per agent; 0: none but ctx's
	Secrets []string      // never written to the record
	// Confined gives each agent its branch as a Confined workspace (an agent CLI in
	// forkbomb's sandbox, the world's MCP server its only tool) rather than the in-process
	// shell of the api engine. Self is the forkbomb binary for that server ("": this one).
	Confined bool
	Self     string
}

// Result is how the race ended.
type Result struct {
	RunID  string
	Winner int    // -1: none
	File   string // TRUNK.winner when there is a winner
}

// ErrNoWinner is a race where no branch passed its check.
var ErrNoWinner = errors.New("no branch passed the check")

// Run races. The branches live in a temporary folder beside the trunk, removed at the end.
func Run(ctx context.Context, o Options) (Result, error) {
	res := Result{Winner: -1}
	if o.Forks < 1 {
		return res, fmt.Errorf("world race: --forks must be at least 1")
	}
	if _, err := world.Load(o.Trunk, 0); err != nil {
		return res, err
	}
	winnerFile := o.Trunk + ".winner"
	if _, err := os.Lstat(winnerFile); err == nil {
		return res, fmt.Errorf("world race: %s exists", winnerFile)
	}
	dir, err := os.MkdirTemp(filepath.Dir(o.Trunk), "."+filepath.Base(o.Trunk)+".race-*")
	if err != nil {
		return res, fmt.Errorf("world race: %w", err)
	}
	defer os.RemoveAll(dir)
	info := o.Agent.Info()
	abs, _ := filepath.Abs(o.Trunk)
	rec, err := record.Create(o.RunsDir, record.Run{ID: record.NewID(), Task: o.Prompt, Engine: info.Name,
		Model: info.Model, Forks: o.Forks, Test: o.Check, Repo: "world:" + abs, Base: "world", Started: time.Now()},
		append(o.Secrets, info.Secrets...))
	if err != nil {
		return res, err
	}
	defer rec.Close()
	res.RunID = filepath.Base(rec.Dir)
	if err := rec.Event(event.RunLevel, event.WorldRunStartData{Forks: o.Forks, World: abs}); err != nil {
		return res, err
	}

	rctx, stop := context.WithCancel(ctx)
	defer stop()
	type done struct {
		n   int
		out engine.Outcome
	}
	finished := make(chan done, o.Forks)
	var wg sync.WaitGroup
	for n := range o.Forks {
		branch := filepath.Join(dir, "branch-"+strconv.Itoa(n)+".world")
		if err := world.Fork(o.Trunk, branch); err != nil {
			return res, err
		}
		rec.Event(n, event.WorldForkStartData{World: "branch-" + strconv.Itoa(n)})
		wg.Add(1)
		bw := &Workspace{File: branch, Limits: o.Limits}
		defer bw.Close()
		var ws engine.Workspace = bw
		if o.Confined {
			c, err := NewConfined(branch, o.Limits, o.Self)
			if err != nil {
				return res, err
			}
			defer c.Close()
			ws = c
		}
		prompt := o.Prompt
		if len(o.Prompts) > 0 {
			prompt = o.Prompts[n%len(o.Prompts)] + "\n\n" + o.Prompt
		}
		go func() {
			defer wg.Done()
			defer func() {
				// A panic in the agent's engine ends its fork, not the race (issue 21: one
				// left the race's record "running").
				if v := recover(); v != nil {
					finished <- done{n, engine.Outcome{State: event.ForkCrashed, Err: fmt.Errorf("panic: %v", v)}}
				}
			}()
			out := o.Agent.Run(rctx, ws, engine.Task{Prompt: prompt, Fork: n, Timeout: o.Timeout,
				Emit: func(data event.Payload) { rec.Event(n, data) }})
			finished <- done{n, out}
		}()
	}
	go func() { wg.Wait(); close(finished) }()

	forks := make([]record.Fork, o.Forks)
	for d := range finished {
		f := record.Fork{N: d.n, State: d.out.State, Exit: d.out.Exit, Reason: d.out.Reason(),
			TokensIn: d.out.Usage.TokensIn, TokensOut: d.out.Usage.TokensOut, CostMicroUSD: d.out.Usage.CostMicroUSD}
		rec.Event(d.n, event.WorldForkExitData{State: d.out.State, Reason: d.out.Reason()})
		if res.Winner >= 0 || d.out.State != event.ForkExited {
			if res.Winner >= 0 && d.out.State == event.ForkKilled {
				f.Verdict = ""
			}
			forks[d.n] = f
			continue
		}
		branch := filepath.Join(dir, "branch-"+strconv.Itoa(d.n)+".world")
		verdict, reason, err := check(ctx, rec, dir, branch, d.n, o)
		if err != nil {
			return res, err
		}
		f.Verdict, f.Reason = verdict, reason
		if verdict == event.Pass {
			f.Score = 1
			res.Winner = d.n
			if err := world.Fork(branch, winnerFile); err != nil {
				return res, err
			}
			res.File = winnerFile
			rec.Event(d.n, event.WorldWinnerData{World: winnerFile})
			stop() // the other agents are killed
		}
		forks[d.n] = f
	}
	status := event.RunNoWinner
	if res.Winner >= 0 {
		status = event.RunWon
	}
	if ctx.Err() != nil {
		status = event.RunInterrupted
	}
	rec.Event(event.RunLevel, event.WorldRunEndData{Status: status})
	err = rec.Update(func(r *record.Run) {
		r.Status, r.Fork, r.Ended = status, forks, time.Now()
		r.Seconds = r.Ended.Sub(r.Started).Seconds()
		if res.Winner >= 0 {
			w := res.Winner
			r.Winner = &w
		}
		for _, f := range forks {
			r.TokensIn += f.TokensIn
			r.TokensOut += f.TokensOut
			r.CostMicroUSD += f.CostMicroUSD
		}
	})
	if err != nil {
		return res, err
	}
	if res.Winner < 0 && status == event.RunNoWinner {
		return res, ErrNoWinner
	}
	return res, nil
}

// check runs the check in a fresh copy of the finished branch: the agent has stopped and never
// had that copy, so nothing it left running could change what the check sees.
func check(ctx context.Context, rec *record.Recorder, dir, branch string, n int, o Options) (event.Verdict, string, error) {
	rec.Event(n, event.WorldJudgeStartData{})
	copyFile := filepath.Join(dir, "check-"+strconv.Itoa(n)+".world")
	if err := world.Fork(branch, copyFile); err != nil {
		return "", "", err
	}
	r, err := world.ExecFile(ctx, copyFile, o.Check, nil, o.Limits)
	if err != nil {
		// A world the agent left unreadable fails its check; it is not the race's fault.
		rec.Event(n, event.WorldVerdictData{Verdict: event.Fail, Reason: err.Error()})
		return event.Fail, err.Error(), nil
	}
	verdict, reason := event.Pass, "check exited 0"
	if r.Status != 0 {
		verdict, reason = event.Fail, fmt.Sprintf("check exited %d: %s", r.Status, tail(r.Stdout, r.Stderr))
	}
	rec.Event(n, event.WorldVerdictData{Verdict: verdict, Reason: reason})
	return verdict, reason, nil
}

func tail(out, errOut []byte) string {
	b := bytes.TrimSpace(append(append([]byte(nil), out...), errOut...))
	if len(b) > 400 {
		b = b[len(b)-400:]
	}
	return string(b)
}

// Workspace is a branch world as an engine sees it: Exec runs the shell command in the world,
// in a worker of its own the kernel confines (world.Runner, started on the first command and
// kept for the branch's life), and the editor gets no files — the world's shell is the tool
// that acts.
type Workspace struct {
	File   string
	Limits world.Limits

	mu     sync.Mutex
	runner *world.Runner
}

// Close ends the branch's worker.
func (w *Workspace) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.runner != nil {
		w.runner.Close()
		w.runner = nil
	}
}

// Exec implements engine.Workspace: the policy's command is ["/bin/sh", "-c", SCRIPT]. A
// panic or a worker that died is the command's failure (status 125, its message on stderr),
// and the agent goes on.
func (w *Workspace) Exec(ctx context.Context, p sandbox.Policy, stdio sandbox.Stdio) (*sandbox.Result, error) {
	if len(p.Command) != 3 || p.Command[1] != "-c" {
		return nil, fmt.Errorf("world: only shell scripts run in a world")
	}
	w.mu.Lock()
	if w.runner == nil {
		w.runner = world.NewRunner()
	}
	r := w.runner
	w.mu.Unlock()
	res, err := r.ExecFile(ctx, w.File, p.Command[2], nil, w.Limits)
	if err != nil {
		return nil, err
	}
	if stdio.Stdout != nil {
		stdio.Stdout.Write(res.Stdout)
	}
	if stdio.Stderr != nil {
		stdio.Stderr.Write(res.Stderr)
	}
	return &sandbox.Result{ExitCode: res.Status}, nil
}

// Files implements engine.Workspace.
func (w *Workspace) Files(context.Context) (string, workspace.Files, error) {
	return "/work", noFiles{}, nil
}

// errShellOnly is what the editor tool tells the model in a world.
var errShellOnly = fmt.Errorf("%w: in a world the shell is the only tool; use it to read and write files", fs.ErrPermission)

type noFiles struct{}

func (noFiles) Stat(context.Context, string) (fs.FileMode, error) { return 0, errShellOnly }
func (noFiles) Read(context.Context, string, int64) ([]byte, fs.FileMode, error) {
	return nil, 0, errShellOnly
}
func (noFiles) List(context.Context, string, int) ([]string, error)      { return nil, errShellOnly }
func (noFiles) Write(context.Context, string, []byte, fs.FileMode) error { return errShellOnly }
