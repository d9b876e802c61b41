package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/forkbomb/forkbomb/internal/lab/mutant"
	"github.com/forkbomb/forkbomb/internal/sandbox"
)

func newMutantsCmd(stdio IO) *cobra.Command {
	var (
		o        mutant.Options
		jsonFile string
		limits   limitFlags
		diffs    int
	)
	cmd := &cobra.Command{
		Use:   `mutants --test "COMMAND" [--paths GLOB]... [--forks K] [--budget DUR] [--json FILE]`,
		Short: "Measure a test suite by the mutants of the source it kills",
		Long: `Generate mutants of the source — small deliberate bugs — and run the tests
against each, every mutant in its own O(1) confined fork (offline, with a
timeout and limits), so a mutant that deletes files or loops forever harms
nothing. Your repository is only read, once, for the snapshot.

Go is mutated from its syntax tree: conditionals and their boundaries,
negations, arithmetic, increments, logic, returned literals and errors,
removed statements. Python and JavaScript are mutated at the token level,
with mutmut's and Stryker's token operators (operators, and/or, not,
booleans, break/continue, numbers, strings); syntax-tree mutators (blocks,
arrays, decorators) are not done.

Each mutant is killed (the tests failed), survived, timed out, or not
compiling. In a Go module, mutants of lines no test reaches (go test
-coverprofile on the untouched code) are reported as not covered and not
run. The score is killed and timed out over all but the not compiling.

Prints a summary per file and the surviving mutants as diffs; --json FILE
writes Stryker's mutation-testing-report-schema, which its HTML viewers open.

` + exitHelp("mutants"),
		Example: `  forkbomb mutants --test "go test ./..." --paths 'internal/parse/...' --forks 4
  forkbomb mutants --test "python3 -m pytest -q" --paths 'pkg/*.py' --budget 10m --json mutants.json`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if o.Test == "" {
				return fmt.Errorf("%w: --test is required (see 'forkbomb mutants --help')", errUsage)
			}
			if o.Forks < 1 {
				return fmt.Errorf("%w: --forks %d: at least 1", errUsage, o.Forks)
			}
			l, err := limits.limits()
			if err != nil {
				return fmt.Errorf("%w: %v", errUsage, err)
			}
			l.Resolve(sandbox.DefaultLimits(o.Forks)).Apply(&o.Policy)
			s, err := openStore()
			if err != nil {
				return err
			}
			o.Store = s
			start := time.Now()
			o.Progress = func(done, total int, r mutant.Result) {
				fmt.Fprintf(stdio.Err, "[%d/%d %s] %s %s→%q: %s\n", done, total, time.Since(start).Round(time.Second), r.ID, r.Original, r.Replacement, r.Status)
			}
			rep, err := mutant.Run(c.Context(), o)
			if err != nil {
				return err
			}
			rep.WriteSummary(stdio.Out, diffs)
			if jsonFile != "" {
				f, err := os.Create(jsonFile)
				if err != nil {
					return fmt.Errorf("--json: %w", err)
				}
				if err := rep.WriteStryker(f); err != nil {
					f.Close()
					return fmt.Errorf("--json: %w", err)
				}
				if err := f.Close(); err != nil {
					return fmt.Errorf("--json: %w", err)
				}
			}
			fmt.Fprintf(stdio.Err, "%d mutants in %.1fs (tests alone: %.1fs)\n", len(rep.Results), rep.Seconds, rep.Baseline)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Repo, "repo", ".", "the repository (only read)")
	f.StringVar(&o.Test, "test", "", "the test command, run with /bin/sh -c; it must pass on the untouched code")
	f.StringArrayVar(&o.Paths, "paths", nil, "files to mutate: a glob on the path or the file name, or DIR/... (repeatable; default all)")
	f.IntVar(&o.Forks, "forks", 2, "mutants tested at once")
	f.DurationVar(&o.Budget, "budget", 0, "stop starting mutants after this long (the rest are reported as ignored)")
	f.DurationVar(&o.Timeout, "timeout", 0, "limit on each mutant's tests (default three times the untouched run plus 10s)")
	f.IntVar(&o.Max, "max", 0, "test at most this many mutants, spread evenly over the source (default all)")
	f.BoolVar(&o.NoCoverage, "no-coverage", false, "also run mutants of lines no test reaches")
	f.StringVar(&jsonFile, "json", "", "write the Stryker mutation-testing-report JSON to FILE")
	f.IntVar(&diffs, "diffs", 20, "surviving mutants shown as diffs")
	limits.add(f, "mutant's test")
	return cmd
}
