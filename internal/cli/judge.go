package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

func newJudgeCmd(stdio IO) *cobra.Command {
	var (
		o        judge.Options
		patches  []string
		asJSON   bool
		strip    []string
		keep     []string
		parallel int
		limits   limitFlags
	)
	cmd := &cobra.Command{
		Use:   `judge --repo DIR [--rev REV] --patch FILE --test "COMMAND" [--hidden DIR]... [--timeout DUR] [--json]`,
		Short: "Judge a patch by the tests it passes, never by its edits to them",
		Long: `Judge a patch the way forkbomb judges a fork: drop its edits to tests and test
configuration (what was dropped is reported), apply the rest to a fresh copy
of the base, lay --hidden folders over it, run the test command there —
confined, offline, with a timeout — and compare with the same command on the
untouched base (cached). The patch passes only if the command exits 0 and
every test that ran at baseline ran again and passed. Output alone is never
trusted; where no test results can be read the verdict is "unknown", which
never passes.

The patch's own text is evidence too: what it adds outside the tests is read
for code that detects or inspects a test run (testing.Testing(), call-stack
walks, PYTEST_CURRENT_TEST, sys.modules or require.cache surgery, imports of
test frameworks, exits from library code...). A patch that passes the tests
with such code gets the verdict "review", each finding named by file and
line: a person decides. The rules are listed in docs/JUDGE.md.

The test command is run with /bin/sh -c. Where it can without changing what
runs, the judge asks the runner for structured output (go test -json,
pytest -rA, node --test-reporter=tap). Readable formats: go test -json, JUnit
XML, TAP (node's runner), cargo test, pytest, and a closing
"N passed, N failed" line.

Each test run is bounded by --memory, --pids and --cpus; by default an equal
share of the machine's memory per patch judged at once (total / --parallel,
512 MiB to 8 GiB) and 2048 processes. A test run that reaches a limit fails,
with a reason that names it ("process limit (2048) reached").

--json prints one object per patch (an array for several); the schema is in
docs/JUDGE.md.

` + exitHelp("judge"),
		Example: `  forkbomb judge --repo . --patch fix.patch --test "go test ./..."
  forkbomb judge --repo . --patch a.patch --patch b.patch --test "npm test" --json
  forkbomb judge --repo . --patch fix.patch --test "pytest -q" --hidden ./hidden-tests`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			fail := func(format string, a ...any) error {
				return &exitError{code: ExitCannotJudge, msg: fmt.Sprintf(format, a...)}
			}
			if len(patches) == 0 || o.Test == "" {
				return fail("--patch and --test are required (see 'forkbomb judge --help')")
			}
			var data [][]byte
			for _, p := range patches {
				b, err := os.ReadFile(p)
				if err != nil {
					return fail("--patch %s: %v", p, err)
				}
				data = append(data, b)
			}
			l, err := state()
			if err != nil {
				return fail("%v", err)
			}
			if o.Store, err = workspace.Open(l.Workspaces()); err != nil {
				return fail("%v", err)
			}
			o.CacheDir = l.Judge()
			o.Strip = judge.StripOptions{Add: strip, Remove: keep}
			o.Parallel = parallel
			if o.Limits, err = limits.limits(); err != nil {
				return fail("%v", err)
			}
			verdicts, err := judge.Judge(c.Context(), o, data)
			if err != nil {
				return &exitError{code: ExitCannotJudge, err: err}
			}
			printJudgeWarnings(stdio.Err, verdicts)
			if asJSON {
				var v any = verdicts
				if len(verdicts) == 1 {
					v = verdicts[0]
				}
				if err := printJSON(stdio.Out, v); err != nil {
					return err
				}
			} else {
				printVerdicts(stdio.Out, patches, verdicts)
			}
			return judgeStatus(verdicts)
		},
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitError{code: ExitCannotJudge, msg: fmt.Sprintf("%v (see 'forkbomb judge --help')", err)}
	})
	f := cmd.Flags()
	f.StringVar(&o.Repo, "repo", ".", "the repository")
	f.StringVar(&o.Rev, "rev", "HEAD", "the base commit")
	f.StringArrayVar(&patches, "patch", nil, "a patch file (repeatable: patches are judged in parallel)")
	f.StringVar(&o.Test, "test", "", "the test command (yours; never read from the repository)")
	f.StringArrayVar(&o.Hidden, "hidden", nil, "a folder of hidden tests laid out like the repository (repeatable)")
	f.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "limit for one test run")
	f.BoolVar(&asJSON, "json", false, "print the verdict as JSON")
	f.StringArrayVar(&strip, "strip", nil, "also strip edits to paths matching this pattern (repeatable)")
	f.StringArrayVar(&keep, "keep", nil, "do not apply this default strip pattern (repeatable; see docs/JUDGE.md)")
	f.IntVar(&parallel, "parallel", 0, "patches judged at once (default: the number of cores)")
	limits.add(f, "test run")
	return cmd
}

// judgeStatus is judge's exit status: a failing (or unknown) patch first,
// then one that needs review.
func judgeStatus(verdicts []*judge.Verdict) error {
	review := false
	for _, v := range verdicts {
		switch v.Verdict {
		case event.Pass:
		case event.Review:
			review = true
		default:
			return &exitError{code: ExitPatchFails}
		}
	}
	if review {
		return &exitError{code: ExitNeedsReview}
	}
	return nil
}

// printJudgeWarnings prints the verdicts' warnings, each once: most are the
// judgement's, some (a sentinel the base gets wrong too) only those
// verdicts' that needed them. Printable: they quote test names, which the
// code under test chose.
func printJudgeWarnings(w io.Writer, verdicts []*judge.Verdict) {
	warned := map[string]bool{}
	for _, v := range verdicts {
		for _, s := range v.Warnings {
			if !warned[s] {
				warned[s] = true
				fmt.Fprintf(w, "forkbomb judge: warning: %s\n", event.Printable(s))
			}
		}
	}
}

// printVerdicts prints one verdict a patch, printable: a reason names the
// tests that failed, a finding quotes the patch, and a stripped path is
// the patch's — none may redraw the terminal or forge a line.
func printVerdicts(w io.Writer, patches []string, verdicts []*judge.Verdict) {
	for i, v := range verdicts {
		fmt.Fprintf(w, "%s: %s — %s\n", event.Printable(patches[i]), v.Verdict, event.Printable(v.Reason))
		if len(v.Stripped) > 0 {
			fmt.Fprintf(w, "  stripped: %s\n", event.Printable(fmt.Sprint(v.Stripped)))
		}
		for _, f := range v.Findings {
			fmt.Fprintf(w, "  finding: %s\n", event.Printable(fmt.Sprintf("%s:%d: %s (%s)", f.File, f.Line, f.Construct, f.Rule)))
		}
	}
}
