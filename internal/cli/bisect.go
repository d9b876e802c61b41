package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/forkbomb/forkbomb/internal/lab/bisect"
	"github.com/forkbomb/forkbomb/internal/sandbox"
)

func newBisectCmd(stdio IO) *cobra.Command {
	var (
		o       bisect.Options
		asJSON  bool
		timeout time.Duration
		limits  limitFlags
	)
	cmd := &cobra.Command{
		Use:   `bisect --good REV --bad REV --test "COMMAND" [--forks K] [--repo DIR] [--json]`,
		Short: "Find the first bad commit, testing K commits at once in confined forks",
		Long: `Find the commit that broke something, as 'git bisect run' does, but testing
--forks commits at once, each in its own confined fork: a range of N commits
takes about log_(K+1)(N) rounds instead of log_2(N) steps.

Your repository is not checked out: forkbomb snapshots --bad once, with a
history as deep as the range (a shallow fetch: a long history before --good
is not copied), and tests each commit in an O(1) fork of that snapshot,
whose tree is moved to the commit inside the fork's sandbox (git read-tree:
only the files that differ are written; offline, with limits). While a
round's tests run, the next round's forks and sandboxes are started, so a
test begins as soon as its commit is picked. --timeout bounds making the
commit's tree, then the test itself from when it begins. Your repository is
only read — its branch, index, working tree and any bisect you are in the
middle of stay as they are.

The test command runs with /bin/sh -c in the commit's tree (its .git is the
snapshot's, read-only and shallow: HEAD is --bad, 'git log' stops about as
deep as --good, and 'git status' shows how the commit's tree differs from
--bad; $TMPDIR is the sandbox's own). As with 'git bisect run': exit 0 is
good, 125 untestable (skipped), 1 to 127 bad; 128 and up, a timeout or a
limit stops the bisect. Only --bad's first-parent chain is searched, so on a
history with merges the answer may be a merge.

--json prints the result (first_bad, candidates, rounds, every commit tested,
and started_ahead: the tests whose sandbox was started a round ahead).

` + fmt.Sprintf("Exit status: %d when one first bad commit was found; %d when skipped commits leave\nseveral candidates (listed); %d when the bisect could not run or stopped;\n%d for a mistake on the command line; %d when interrupted.",
			ExitOK, ExitBisectAmbiguous, ExitFailed, ExitUsage, ExitInterrupted),
		Example: `  forkbomb bisect --good v1.2.0 --bad main --test "go test ./pkg/..." --forks 4
  forkbomb bisect --good HEAD~200 --bad HEAD --test ./check.sh --json`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if o.Good == "" || o.Bad == "" || o.Test == "" {
				return fmt.Errorf("%w: --good, --bad and --test are required (see 'forkbomb bisect --help')", errUsage)
			}
			if o.Forks < 1 {
				return fmt.Errorf("%w: --forks %d: at least 1", errUsage, o.Forks)
			}
			l, err := limits.limits()
			if err != nil {
				return fmt.Errorf("%w: %v", errUsage, err)
			}
			l.Resolve(sandbox.DefaultLimits(o.Forks)).Apply(&o.Policy)
			o.Policy.Timeout = timeout
			s, err := openStore()
			if err != nil {
				return err
			}
			o.Store = s
			o.Progress = func(p bisect.Progress) {
				var parts []string
				for _, t := range p.Tested {
					parts = append(parts, fmt.Sprintf("%s %s", short(t.Commit), t.Verdict))
				}
				fmt.Fprintf(stdio.Err, "round %d: %s; %d left\n", p.Round, strings.Join(parts, ", "), p.Remaining)
			}
			res, err := bisect.Run(c.Context(), o)
			if err != nil {
				return err
			}
			if asJSON {
				if err := printJSON(stdio.Out, res); err != nil {
					return err
				}
			} else if res.FirstBad != "" {
				fmt.Fprintf(stdio.Out, "%s is the first bad commit: %s\n", res.FirstBad, res.Subject)
			} else {
				fmt.Fprintln(stdio.Out, "Only skipped commits are left; the first bad commit could be any of:")
				for _, cand := range res.Candidates {
					fmt.Fprintln(stdio.Out, cand)
				}
			}
			if !asJSON {
				fmt.Fprintf(stdio.Err, "%d commits, %d rounds of up to %d forks, %d tested, %.1fs\n",
					res.Commits, res.Rounds, res.Forks, len(res.Tested), res.Seconds)
			}
			if res.FirstBad == "" {
				return &exitError{code: ExitBisectAmbiguous}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Repo, "repo", ".", "the repository (only read)")
	f.StringVar(&o.Good, "good", "", "a commit known good")
	f.StringVar(&o.Bad, "bad", "", "a commit known bad (a descendant of --good)")
	f.StringVar(&o.Test, "test", "", "the test command, run with /bin/sh -c in each commit's tree")
	f.IntVar(&o.Forks, "forks", 4, "commits tested at once")
	f.DurationVar(&timeout, "timeout", 10*time.Minute, "limit on each commit's test; reaching it stops the bisect")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	limits.add(f, "test")
	return cmd
}
