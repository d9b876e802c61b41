package full

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/forkbomb/forkbomb/internal/cli"

	"github.com/forkbomb/forkbomb/internal/engine"
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
world's shell as the tool that acts. When an agent stops, CMD runs in a fresh copy
of its branch (the agent never had that copy); the first branch whose CMD exits 0
is kept as TRUNK.winner and the other agents are stopped. TRUNK is never written.
The race is recorded under runs/ like any race: 'forkbomb show' and 'forkbomb ui'
read it.

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
			res, err := worldrace.Run(c.Context(), worldrace.Options{Trunk: args[0], Forks: forks, Check: check,
				Prompt: args[1], Prompts: variants, Agent: agent, RunsDir: dir, Limits: wl.Limits, Timeout: timeout, Confined: !d.Loop})
			if res.RunID != "" {
				fmt.Fprintf(k.IO.Out, "run %s\n", res.RunID)
			}
			if errors.Is(err, worldrace.ErrNoWinner) {
				fmt.Fprintln(k.IO.Out, "no branch passed the check")
				return cli.Exit(cli.ExitNoWinner, nil)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(k.IO.Out, "winner: branch %d, kept as %s\n", res.Winner, res.File)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&forks, "forks", 2, "branches")
	f.StringVar(&check, "check", "", "shell script run in a fresh copy of each finished branch; exit 0 passes")
	eng.AddEngine(f, "", "the agent engine")
	eng.AddSettings(f)
	f.StringVar(&prompts, "prompts", "", "a file of prompt variants separated by lines of ---, one per branch (as in run)")
	eng.AddRecheck(f, "run the canary for the installed CLI first")
	f.StringVar(&runsDir, "runs-dir", "", "where the race is recorded (default $FORKBOMB_HOME/runs)")
	f.DurationVar(&timeout, "agent-timeout", 0, "per agent (0: none); --timeout bounds each exec")
	wl.Register(cmd)
	return cmd
}
