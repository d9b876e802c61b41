package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/forkbomb/forkbomb/internal/lab/eval"
	"github.com/forkbomb/forkbomb/internal/lab/mutant"
)

func newEvalCmd(stdio IO) *cobra.Command {
	var (
		o       eval.Options
		engines string
		eng     = NewEngineFlags(nil)
		asJSON  bool
		runsDir string
		tasks   string
		minStr  float64
	)
	cmd := &cobra.Command{
		Use:   `eval --engines ENGINE[:MODEL],... (--faults N --test "COMMAND" [--paths GLOB]... | --tasks mined:[REPO]|ID,... [--min-strength R]) [--json]`,
		Short: "Rank agents and models by the faults of your own repository they fix",
		Long: `Turn mutants of your code that your tests kill into faults, and race each
engine, alone in a confined fork, to fix each: the judge scores a patch with
your tests (the ones that caught the mutant among them; edits to tests are
stripped), as it judges any run. Prints a table per engine — faults fixed,
median time, median turns, tokens, cost — best first; --json prints it all.
Every attempt is an ordinary run ('forkbomb show ID', the UI).

--engines is a comma-separated list of ENGINE[:MODEL]: an engine 'forkbomb
run --engine' knows, readied as run readies it (the same flags, keys from
the same environment, the same canary), and MODEL, when given, its model in
place of --model: api:MODEL is forkbomb's own loop over --provider with
that model. The engines:
` + eng.Docs() + `
The faults come from 'forkbomb mutants' (--paths, --forks): only killed
mutants are used, spread over the source. Your repository is only read.

--tasks races each engine on stored tasks instead: 'mined:' is every task
'forkbomb task mine' made, 'mined:REPO' those of a repository of that folder
name, and any stored task id may be listed. Each attempt is judged with the
task's test command and hidden tests, and the verifier measures each solution
as 'forkbomb run --verify auto' does (docs/JUDGE.md): the share of mutants of
the lines it added that the task's tests catch, its time bounded by --timeout.
The results accumulate, across evaluations, in
$FORKBOMB_HOME/lab/eval/board.json (locked, written whole): the table ranks
every engine on everything recorded there — races solved, distinct tasks
solved, tokens, cost, median wall time — best first, with two columns on how
much its passes are worth: "strength", the median share of its solutions'
mutants the tests caught, and "weak<R", how many of its measured passes a
verifier demanding R (--min-strength, default 0.8) would have rejected — the
passes whose tests barely pin the fix, as 'run --min-strength R' would call
them unverified. A weak pass still counts as solved. --json prints this
evaluation's attempts (each with the verifier's word and its survivors) and
the table; 'forkbomb ui' shows the board.

` + exitHelp("eval"),
		Example: `  forkbomb eval --engines api:claude-sonnet-5-5,api:claude-haiku-5 --faults 10 --test "go test ./..."
  forkbomb task mine --repo . --last 50 && forkbomb eval --engines api:claude-sonnet-5-5,api:claude-haiku-5 --tasks mined:`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if engines == "" || o.Test == "" && tasks == "" {
				return fmt.Errorf("%w: --engines and --test are required, or --engines and --tasks (see 'forkbomb eval --help')", errUsage)
			}
			if minStr < 0 || minStr > 1 || c.Flags().Changed("min-strength") && tasks == "" {
				return fmt.Errorf("%w: --min-strength is a share from 0 to 1, for --tasks", errUsage)
			}
			var picked []eval.Task
			if tasks != "" {
				ls, err := labStore()
				if err != nil {
					return err
				}
				if picked, err = eval.SelectTasks(ls, tasks); err != nil {
					return err
				}
			}
			for _, entry := range strings.Split(engines, ",") {
				entry = strings.TrimSpace(entry)
				name, model, _ := strings.Cut(entry, ":")
				es := eng.Settings
				if model != "" {
					es.Model = model
				}
				a, done, err := ready(c.Context(), stdio, name, Setup{Settings: es, Recheck: eng.Recheck})
				if err != nil {
					return fmt.Errorf("--engines %s: %w", entry, err)
				}
				defer done()
				o.Engines = append(o.Engines, eval.Entry{Name: entry, Agent: a})
			}
			l, err := state()
			if err != nil {
				return err
			}
			if o.Store, err = openStore(); err != nil {
				return err
			}
			o.CacheDir = l.Judge()
			if o.RunsDir, err = runsDirOr(runsDir); err != nil {
				return err
			}
			o.Progress = stdio.Err
			if tasks != "" {
				return evalTasks(c.Context(), stdio, eval.TasksOptions{
					Store: o.Store, RunsDir: o.RunsDir, CacheDir: o.CacheDir, Tasks: picked, Engines: o.Engines,
					Timeout: o.Timeout, Board: &eval.Board{Path: l.EvalBoard()}, Progress: stdio.Err,
				}, minStr, asJSON)
			}
			o.Mutants.Progress = func(done, total int, r mutant.Result) {
				fmt.Fprintf(stdio.Err, "finding faults [%d/%d] %s: %s\n", done, total, r.ID, r.Status)
			}
			res, err := eval.Run(c.Context(), o)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(stdio.Out, res)
			}
			res.WriteTable(stdio.Out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&engines, "engines", "", "the contenders, comma-separated: ENGINE[:MODEL], ENGINE one of "+orList(eng.Offered()))
	f.IntVar(&o.Faults, "faults", 5, "faults to make from killed mutants")
	f.StringVar(&o.Test, "test", "", "the test command (it must pass on the untouched code)")
	f.StringVar(&o.Repo, "repo", ".", "the repository (only read)")
	f.StringArrayVar(&o.Mutants.Paths, "paths", nil, "files to make faults in (as forkbomb mutants --paths)")
	f.IntVar(&o.Mutants.Forks, "forks", 2, "mutants tested at once while finding faults")
	f.IntVar(&o.Mutants.Max, "max-mutants", 0, "mutants tested while finding faults (default: all covered ones)")
	f.DurationVar(&o.Timeout, "timeout", eval.DefaultTimeout, "limit for each attempt's agent (and, with --tasks, for the verifier on its solution)")
	eng.AddSettings(f)
	eng.AddRecheck(f, "run the canary for the installed agent CLI first (attempts start only if it passes)")
	f.StringVar(&runsDir, "runs-dir", "", "where attempts are recorded (default $FORKBOMB_HOME/runs)")
	f.StringVar(&tasks, "tasks", "", "race on stored tasks instead of faults: mined:, mined:REPO or task ids, comma-separated")
	f.Float64Var(&minStr, "min-strength", eval.DefaultMinStrength, "with --tasks: count as weak the passes a verifier demanding this share (0 to 1) of mutants caught would have rejected")
	f.BoolVar(&asJSON, "json", false, "print faults (or tasks), attempts and the table as JSON")
	return cmd
}

// evalTasks races the engines on stored tasks and prints the board, its
// weak passes counted against minStrength.
func evalTasks(ctx context.Context, stdio IO, o eval.TasksOptions, minStrength float64, asJSON bool) error {
	attempts, err := eval.RunTasks(ctx, o)
	if err != nil {
		return err
	}
	all, err := o.Board.Attempts()
	if err != nil {
		return err
	}
	table := eval.Standings(all, minStrength)
	if asJSON {
		if attempts == nil {
			attempts = []eval.Attempt{}
		}
		return printJSON(stdio.Out, struct {
			Attempts    []eval.Attempt  `json:"attempts"`
			Board       string          `json:"board"`
			MinStrength float64         `json:"min_strength"`
			Table       []eval.Standing `json:"table"`
		}{attempts, o.Board.Path, minStrength, table})
	}
	eval.WriteStandings(stdio.Out, table, minStrength)
	fmt.Fprintf(stdio.Err, "%d attempts now, %d on the board (%s)\n", len(attempts), len(all), o.Board.Path)
	return nil
}
