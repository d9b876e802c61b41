package engine

import (
	"context"
	"io"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// Agent drives one agent in one fork: it runs the agent on a task until
// the agent stops, the task's timeout passes or ctx is cancelled (the race
// stopping it), streams what the agent does as events, and reports how it
// ended and what it cost. The command engine (Command) runs an agent
// program inside the fork's sandbox; the api engine (API) is forkbomb's
// own tool loop over a model's API; ClaudeCode and Codex run those CLIs
// whole in the sandbox, and the hosted engine is the api loop through a
// gateway. Each implements this interface; the race never asks which one
// it has.
type Agent interface {
	// Info says what the record keeps of the engine.
	Info() Info
	// Run drives the agent to its end. It never returns before every
	// process it started in the fork is gone.
	Run(ctx context.Context, w Workspace, t Task) Outcome
}

// Info is what the record says of an engine, and what it must hide.
type Info struct {
	Name  string   // "command", "api"
	Argv  []string // the agent program (command engine)
	Model string   // the model (api engine)
	// Version is what the agent CLI says it is (claude-code, codex).
	Version string
	// Secrets are values the engine holds (an API key) that the record
	// must never show.
	Secrets []string
}

// Workspace is what an agent gets of its fork: commands run confined in
// it, and its files for an in-process tool. *workspace.Store serves it
// through the race; a world would serve it from memory.
type Workspace interface {
	// Exec runs one command confined in the fork (its tree the command's
	// cwd and only writable tree).
	Exec(ctx context.Context, p sandbox.Policy, stdio sandbox.Stdio) (*sandbox.Result, error)
	// Files returns the path a command in the fork sees as its root, and
	// the fork's files.
	Files(ctx context.Context) (root string, files workspace.Files, err error)
}

// Sessions is what a Workspace may offer besides Exec: one sandbox kept
// for many commands (sandbox.Session), each command then costing a fork
// in it rather than a sandbox start, with every per-command guarantee of
// Exec kept. A workspace without it, or whose Session fails, is served
// by Exec.
type Sessions interface {
	// Session starts one, confined as Exec confines a command; p.Command,
	// p.Timeout and p.MaxOutput are per command and ignored.
	Session(ctx context.Context, p sandbox.Policy) (Session, error)
}

// Session runs commands one at a time in one sandbox of a fork.
type Session interface {
	Run(ctx context.Context, c sandbox.Cmd, stdio sandbox.Stdio) (*sandbox.Result, error)
	Close() error
}

// Task is one agent's assignment in a race.
type Task struct {
	Prompt  string        // the task as the agent gets it
	Fork    int           // the fork's number (the command engine's $FORKBOMB_FORK)
	Timeout time.Duration // for the whole agent; 0: none but ctx's
	// Confine gives a command the race's confinement beyond the fork
	// itself: its resource limits and what no agent may see. Every
	// command an engine runs in the fork goes through it (nil: nothing
	// added).
	Confine func(*sandbox.Policy)
	// Allow is the race's --network allow: hosts (canonical host:port).
	// Confine already routes a command with no network of its own to
	// them; an engine that gives its commands a proxy network of its own
	// (a model proxy) must allow these hosts on it.
	Allow []string
	// Emit streams the agent's events (model calls, tool calls, a limit
	// that ended one command); nil drops them.
	Emit func(event.Payload)
	// Log receives the agent's output for agent.log (the command
	// engine's stdout and stderr; the api engine's tool calls and
	// results); nil drops it. Engines write it from one goroutine at a
	// time.
	Log io.Writer
}

func (t *Task) defaults() {
	if t.Confine == nil {
		t.Confine = func(*sandbox.Policy) {}
	}
	if t.Emit == nil {
		t.Emit = func(event.Payload) {}
	}
	if t.Log == nil {
		t.Log = io.Discard
	}
}

// Outcome is how an agent ended. An engine that is not a process (the api
// loop, a hosted agent) says so here, without pretending to an exit
// status it never had.
type Outcome struct {
	// State is one of event.ForkExited (the agent stopped by itself),
	// ForkCrashed (a non-zero exit, or Err), ForkTimedOut, ForkFailed (a
	// resource limit: Limit names it) or ForkKilled (ctx was cancelled).
	State event.ForkState
	Exit  int    // the agent program's exit status (0 for an engine that is not a process)
	Limit string // the resource limit that ended the agent, for a person ("memory limit (512 MiB) reached")
	Err   error  // why the engine could not drive the agent (ForkCrashed)
	Usage Usage
}

// Reason says why the agent ended when that needs saying: the limit, or
// the engine's error.
func (o Outcome) Reason() string {
	switch {
	case o.Limit != "":
		return o.Limit
	case o.Err != nil:
		return o.Err.Error()
	}
	return ""
}

// Usage is what an agent consumed of a model.
type Usage struct {
	Turns        int
	TokensIn     int64
	TokensOut    int64
	CostMicroUSD int64 // millionths of a dollar, at the engine's prices
}
