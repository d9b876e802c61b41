package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/forkbomb/forkbomb/internal/lab/mine"
)

func newTaskMineCmd(stdio IO) *cobra.Command {
	var (
		o      mine.Options
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   `mine [--repo DIR] [--last N] [--paths PATH]... [--test "COMMAND"] [--json]`,
		Short: "Make stored tasks of recent commits whose tests pin their change",
		Long: `Walk the last --last first-parent commits of --repo, oldest first (only
read: a snapshot is taken once, and the judge's copy of each parent it judges
can share the history of the one before; the commits are listed newest
first) and keep each commit that changes code and tests together when,
judged in confined forks by the judge a race uses, with the commit's test
files laid over the parent:

  - the commit's tests fail on its parent with the parent's code and pass
    with the commit's code (FAIL_TO_PASS), and every test that passed on
    the parent still passes (PASS_TO_PASS);
  - the commit's code change (the gold patch) passes the judge and the
    empty patch fails it, each in 3 runs out of 3 (otherwise: flaky).

Each kept commit becomes a stored task, 'mined-REPO-COMMIT': base = the
parent, hidden tests = the commit's test files (kept under
$FORKBOMB_HOME/lab/mined/, never shown to an agent), a prompt from the
commit's message naming the tests that must come to pass, and the test
command (--test, or detected: go test ./..., python3 -m pytest, npm test,
node --test). Every other commit is listed with why it was skipped: a merge,
no test change, no code change, tests that need the network or time out,
flaky tests, a gold patch that fails. Run a task with 'forkbomb run --task
ID'; rank engines on all of them with 'forkbomb eval --tasks mined:'.

Progress goes to stderr; --json prints the kept and skipped commits.`,
		Example: `  forkbomb task mine --repo . --last 50 --paths internal/parse
  forkbomb task mine --repo ../lib --test "python3 -m pytest -q tests" --json`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if o.Last < 1 {
				return fmt.Errorf("%w: --last %d: at least 1", errUsage, o.Last)
			}
			l, err := state()
			if err != nil {
				return err
			}
			if o.Store, err = openStore(); err != nil {
				return err
			}
			if o.Lab, err = labStore(); err != nil {
				return err
			}
			o.CacheDir = l.Judge()
			o.Progress = stdio.Err
			res, err := mine.Run(c.Context(), o)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(stdio.Out, res)
			}
			for _, k := range res.Kept {
				fmt.Fprintf(stdio.Out, "kept    %s  %s  (%d fail to pass, %d pass to pass)\n", short(k.Commit), k.Task, len(k.FailToPass), k.PassToPass)
			}
			for _, s := range res.Skipped {
				fmt.Fprintf(stdio.Out, "skipped %s  %s\n", short(s.Commit), s.Reason)
			}
			fmt.Fprintf(stdio.Err, "%d kept, %d skipped, %.1fs\n", len(res.Kept), len(res.Skipped), res.Seconds)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Repo, "repo", ".", "the repository (only read)")
	f.StringVar(&o.Rev, "rev", "HEAD", "the newest commit to walk back from")
	f.IntVar(&o.Last, "last", 20, "first-parent commits to examine")
	f.StringArrayVar(&o.Paths, "paths", nil, "only commits touching this folder or glob (repeatable)")
	f.StringVar(&o.Test, "test", "", "the test command (default: detected per commit)")
	f.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "limit on each judged test run; reaching it skips the commit")
	f.IntVar(&o.Parallel, "parallel", 0, "judged test runs at once (default: one per core)")
	f.BoolVar(&asJSON, "json", false, "print the kept and skipped commits as JSON")
	return cmd
}
