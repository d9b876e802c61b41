package full

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/forkbomb/forkbomb/internal/cli"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/worldrace"
)

func newWorldRaceCmd(k cli.Kit) *cobra.Command {
	var (
		forks int
		check string
		// forkbomb's own loop works a world through its shell; an agent
		// CLI through the world's MCP server
		eng     = cli.NewEngineFlags(func(d *engine.Descriptor) bool { return d.Loop || d.MCP })
		runsDir string
		timeout time.Duration
		prompts string
		wl      cli.WorldLimits
	)
	cmd := &cobra.Command{
		Use:   "race TRUNK --forks N --check CMD \"PROMPT\"",
		Short: "Fork a world N times, drive an agent in each, keep the first whose check passes",
		Long: `Fork the world TRUNK N times and drive an agent in each branch, with the
world's shell as the tool that acts. When an agent stops, its branch's /work
becomes a patch against TRUNK's (a git patch, as a fork's in 'run'), and CMD runs
in a fresh copy of TRUNK with that patch applied — a world the agent never had,
with TRUNK's shell state. The first branch whose CMD exits 0 is kept as
TRUNK.winner (the branch as its agent left it) and the other agents are stopped.
TRUNK is never written. The race is a run like any other: recorded under runs/
with each branch's patch and verdict ('forkbomb show', 'forkbomb runs' and
'forkbomb ui' read it), its progress on stderr.

The engine (--engine) is readied as 'forkbomb run' readies it, from the same
flags and environment. Forkbomb's own loop calls the world's shell here; an agent
CLI runs in each branch as 'world drive' runs it: in forkbomb's sandbox, the
world's MCP shell its only tool, its key held by forkbomb's model proxy, once
its canary has passed. The engines:
` + eng.Docs() + `
Exit status: 0 when a branch won; 1 when none passed or the race could not run;
2 for a mistake on the command line; 130 when interrupted.`,
		Args: cli.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			if check == "" {
				return cli.Usagef("--check is required")
			}
			d, err := engine.Lookup(eng.Name)
			if err != nil {
				return err
			}
			agent, done, err := k.Ready(c.Context(), eng.Name, cli.Setup{Settings: eng.Settings, Recheck: eng.Recheck})
			if err != nil {
				return err
			}
			defer done()
			variants, err := cli.ReadPrompts(prompts)
			if err != nil {
				return err
			}
			dir, err := k.RunsDir(runsDir)
			if err != nil {
				return err
			}
			// an agent CLI gets each branch as a Confined workspace (the
			// world's MCP server in its sandbox); forkbomb's loop calls
			// the world's shell here
			res, err := worldrace.Run(c.Context(), worldrace.Options{Trunk: args[0], Limits: wl.Limits, Confined: !d.Loop,
				Race: run.Options{Task: args[1], Prompts: variants, Forks: forks, Engine: agent, Test: check, Timeout: timeout,
					RunsDir: dir, Progress: k.IO.Err}})
			if res.Run != nil {
				fmt.Fprintf(k.IO.Out, "run %s\n", res.Run.ID)
			}
			if errors.Is(err, worldrace.ErrNoWinner) {
				fmt.Fprintln(k.IO.Out, "no branch passed the check")
				return cli.Exit(cli.ExitNoWinner, nil)
			}
			if err != nil {
				return err
			}
			if res.File == "" { // no winner and no error: interrupted before a branch passed
				return cli.Exit(cli.ExitInterrupted, nil)
			}
			fmt.Fprintf(k.IO.Out, "winner: branch %d, kept as %s\n", *res.Run.Winner, res.File)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&forks, "forks", 2, "branches")
	f.StringVar(&check, "check", "", "shell script run in a fresh copy of TRUNK with a finished branch's patch applied; exit 0 passes")
	eng.AddEngine(f, "", "the agent engine")
	eng.AddSettings(f)
	f.StringVar(&prompts, "prompts", "", "a file of prompt variants separated by lines of ---, one per branch (as in run)")
	eng.AddRecheck(f, "run the canary for the installed CLI first")
	f.StringVar(&runsDir, "runs-dir", "", "where the race is recorded (default $FORKBOMB_HOME/runs)")
	f.DurationVar(&timeout, "agent-timeout", 30*time.Minute, "limit for each branch's agent (as run's --timeout); --timeout bounds each exec")
	wl.Register(cmd)
	return cmd
}
