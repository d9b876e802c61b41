package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// Command is the command engine: any agent program, run whole inside the
// fork's sandbox. It gets the task on stdin and in $FORKBOMB_TASK, its
// fork's number in $FORKBOMB_FORK; its stdout and stderr are its log.
type Command struct {
	Argv []string
}

// commandEngine is the command engine's Descriptor.
var commandEngine = Descriptor{
	Name:    "command",
	Summary: "any agent program, run whole inside the fork's sandbox: --agent",
	Doc: "any agent program (--agent), run whole inside the fork's sandbox with everything " +
		"it starts; it gets the task on stdin and in $FORKBOMB_TASK.",
	Flags: []*Flag{FlagAgent},
	New:   func(_ context.Context, s Settings) (Agent, error) { return NewCommand(s) },
}

// NewCommand checks s for the command engine: Argv, else Agent run by
// /bin/sh -c.
func NewCommand(s Settings) (Command, error) {
	if len(s.Argv) == 0 && s.Agent != "" {
		s.Argv = []string{"/bin/sh", "-c", s.Agent}
	}
	if len(s.Argv) == 0 {
		return Command{}, &SettingsError{Engine: "command", Setting: "Argv", Msg: "the command engine needs --agent"}
	}
	return Command{Argv: s.Argv}, nil
}

// Info implements Agent.
func (c Command) Info() Info { return Info{Name: "command", Argv: c.Argv} }

// Run implements Agent: the agent program and everything it starts run in
// one sandbox, bounded by the task's confinement and timeout.
func (c Command) Run(ctx context.Context, w Workspace, t Task) Outcome {
	t.defaults()
	p := sandbox.Policy{
		Command:    c.Argv,
		Timeout:    t.Timeout,
		SetEnv:     []string{"FORKBOMB_TASK=" + t.Prompt, fmt.Sprintf("FORKBOMB_FORK=%d", t.Fork)},
		MaxOutput:  8 << 20,
		Toolchains: true,
	}
	t.Confine(&p)
	res, err := w.Exec(ctx, p, sandbox.Stdio{Stdin: strings.NewReader(t.Prompt), Stdout: t.Log, Stderr: t.Log})
	return processOutcome(ctx, res, err, sandbox.LimitReason(res, p))
}

// processOutcome reads how an agent process ended.
func processOutcome(ctx context.Context, res *sandbox.Result, err error, limit string) Outcome {
	switch {
	case ctx.Err() != nil:
		return Outcome{State: event.ForkKilled}
	case err != nil:
		return Outcome{State: event.ForkCrashed, Err: err}
	case limit != "":
		// A fork bomb or a memory bomb ends this fork's agent only; its
		// patch is still judged.
		return Outcome{State: event.ForkFailed, Exit: res.ExitCode, Limit: limit}
	case res.TimedOut:
		return Outcome{State: event.ForkTimedOut, Exit: res.ExitCode}
	case res.ExitCode != 0:
		return Outcome{State: event.ForkCrashed, Exit: res.ExitCode}
	}
	return Outcome{State: event.ForkExited}
}
