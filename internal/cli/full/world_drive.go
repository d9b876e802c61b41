package full

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/forkbomb/forkbomb/internal/cli"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/worldrace"
)

func newWorldDriveCmd(k cli.Kit) *cobra.Command {
	var (
		// an agent CLI that takes the world's MCP server as its only tool
		eng     = cli.NewEngineFlags(func(d *engine.Descriptor) bool { return d.MCP })
		logPath string
		timeout time.Duration
		wl      cli.WorldLimits
	)
	cmd := &cobra.Command{
		Use:   "drive WORLD \"PROMPT\" [--engine E] [--max-turns N] [--model M] [--log PATH]",
		Short: "One agent CLI turn whose only tool is this world's shell",
		Long: `Run an agent CLI (--engine) once on PROMPT with one tool: the world's shell
(its MCP server, 'forkbomb world mcp'). Its own file, shell and web tools are denied.
The CLI runs in forkbomb's sandbox as in a race, readied as 'forkbomb run' readies
it: its only way out is forkbomb's model proxy, which holds the key from forkbomb's
environment while the CLI holds a placeholder. The MCP server runs inside that
sandbox on a copy of the world; when the CLI stops, the copy replaces WORLD
atomically, under the world's lock. The canary must have passed for the installed
CLI ('forkbomb canary', or --recheck). The engines:
` + eng.Docs() + `
Exit status: 0 when the agent stopped by itself; 1 when it crashed, timed out or
hit a limit; 2 when it could not run.`,
		Args: cli.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			var log io.Writer = io.Discard
			if logPath != "" {
				f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
				if err != nil {
					return fmt.Errorf("world drive: %w", err)
				}
				defer f.Close()
				log = f
			}
			agent, done, err := k.Ready(c.Context(), eng.Name, cli.Setup{Settings: eng.Settings, Recheck: eng.Recheck})
			if err != nil {
				return cli.Exit(cli.ExitCouldNotRun, err)
			}
			defer done()
			var calls atomic.Int64
			out, err := worldrace.Drive(c.Context(), worldrace.DriveOptions{File: args[0], Prompt: args[1], Agent: agent,
				Limits: wl.Limits, Timeout: timeout, Log: log, Emit: func(d event.Payload) {
					if d.Kind() == event.ToolCall {
						calls.Add(1)
					}
				}})
			if err != nil {
				return err
			}
			fmt.Fprintf(k.IO.Out, "drive: %s, %d model requests, %d tool calls\n", out.Reason(), out.Usage.Turns, calls.Load())
			if out.State != event.ForkExited {
				return cli.Exit(cli.ExitFailed, errors.New("world drive: "+out.Reason()))
			}
			return nil
		},
	}
	f := cmd.Flags()
	eng.AddEngine(f, "", "the agent CLI")
	eng.AddSettings(f)
	f.StringVar(&logPath, "log", "", "write the CLI's transcript (stream-json) here")
	eng.AddRecheck(f, "run the canary for the installed CLI first")
	f.DurationVar(&timeout, "agent-timeout", 0, "for the whole turn (0: none); --timeout bounds each shell call")
	wl.Register(cmd)
	return cmd
}
