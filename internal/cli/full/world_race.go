package full

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/forkbomb/forkbomb/internal/cli"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/worldrace"
)

func newWorldRaceCmd(k cli.Kit) *cobra.Command {
	var (
		forks   int
		check   string
		eng     string
		es      engine.Settings
		runsDir string
		timeout time.Duration
		recheck bool
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

--engine api uses forkbomb's own loop; its key is $ANTHROPIC_API_KEY (or
$OPENAI_API_KEY with --provider openai) and $ANTHROPIC_BASE_URL an endpoint.
--engine claude-code drives the real Claude Code CLI in each branch as 'world
drive' does: in forkbomb's sandbox, the world's MCP shell its only tool, its key
held by forkbomb's model proxy, once its canary has passed.

Exit status: 0 when a branch won; 1 when none passed or the race could not run;
2 for a mistake on the command line; 130 when interrupted.`,
		Args: cli.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			if check == "" {
				return cli.Usagef("--check is required")
			}
			var agent engine.Agent
			switch eng {
			case "api":
				p := strings.ToUpper(es.Provider)
				if p == "" {
					p = "ANTHROPIC"
				}
				es.APIKey, es.BaseURL = os.Getenv(p+"_API_KEY"), os.Getenv(p+"_BASE_URL")
				a, err := engine.New(eng, es)
				if err != nil {
					return err
				}
				agent = a
			case "claude-code":
				if !c.Flags().Changed("model") {
					es.Model = "" // the CLI's default, not the api engine's
				}
				cc, done, err := k.ClaudeCode(c.Context(), es, recheck)
				if err != nil {
					return err
				}
				defer done()
				if c.Flags().Changed("max-turns") {
					cc.MaxTurns = es.MaxTurns
				}
				agent = cc
			default:
				return cli.Usagef("--engine %q: worlds race with api or claude-code", eng)
			}
			variants, err := readPromptVariants(prompts)
			if err != nil {
				return err
			}
			dir, err := k.RunsDir(runsDir)
			if err != nil {
				return err
			}
			res, err := worldrace.Run(c.Context(), worldrace.Options{Trunk: args[0], Limits: wl.Limits, Confined: eng == "claude-code",
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
	f.StringVar(&eng, "engine", "api", "the agent engine (api or claude-code)")
	f.StringVar(&es.Provider, "provider", "anthropic", "api engine: anthropic or openai")
	f.StringVar(&es.Model, "model", "claude-sonnet-5-5", "the model (claude-code: the CLI's default unless given)")
	f.IntVar(&es.MaxTurns, "max-turns", 30, "turns per agent (claude-code: the CLI's default unless given)")
	f.StringVar(&prompts, "prompts", "", "a file of prompt variants separated by lines of ---, one per branch (as in run)")
	f.BoolVar(&recheck, "recheck", false, "claude-code: run the canary for the installed CLI first")
	f.StringVar(&runsDir, "runs-dir", "", "where the race is recorded (default $FORKBOMB_HOME/runs)")
	f.DurationVar(&timeout, "agent-timeout", 30*time.Minute, "limit for each branch's agent (as run's --timeout); --timeout bounds each exec")
	wl.Register(cmd)
	return cmd
}

// readPromptVariants reads run's --prompts format: variants separated by lines of ---.
func readPromptVariants(file string) ([]string, error) {
	if file == "" {
		return nil, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--prompts: %w", err)
	}
	var out []string
	for _, p := range strings.Split(string(data), "\n---\n") {
		if strings.TrimSpace(p) != "" {
			out = append(out, strings.TrimSpace(p))
		}
	}
	return out, nil
}
