package worldrace

import (
	"context"
	"io"
	"time"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/world"
)

// DriveOptions are one agent turn in one world.
type DriveOptions struct {
	File    string
	Prompt  string
	Agent   engine.Agent // an agent CLI engine (claude-code)
	Limits  world.Limits // per shell call
	Timeout time.Duration
	Log     io.Writer // the CLI's transcript
	Emit    func(event.Payload)
	Self    string // forkbomb, for the MCP server ("": this binary)
}

// Drive runs the agent once on the world through a Confined workspace: the world is replaced
// by what the agent made when it stops (whatever way it stops, the world stays a valid file:
// the old one, or the copy once it decoded).
func Drive(ctx context.Context, o DriveOptions) (engine.Outcome, error) {
	if _, err := world.Load(o.File, 0); err != nil {
		return engine.Outcome{}, err
	}
	c, err := NewConfined(o.File, o.Limits, o.Self)
	if err != nil {
		return engine.Outcome{}, err
	}
	defer c.Close()
	return o.Agent.Run(ctx, c, engine.Task{Prompt: o.Prompt, Timeout: o.Timeout, Log: o.Log, Emit: o.Emit}), nil
}
