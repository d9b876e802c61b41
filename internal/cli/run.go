package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/record"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

func newRunCmd(stdio IO, b build) *cobra.Command {
	var (
		o       run.Options
		eng     = NewEngineFlags(nil)
		prompts string
		asJSON  bool
		limits  limitFlags
		network string
		view    uiFlags
		task    string // --task: a stored task's id or a task file
		backend = newBackendFlags(b)
	)
	def := engine.Default()
	pick := fmt.Sprintf("Without --engine: %s when the %s CLI is installed, else %s with --%s.", def.Name, def.Bin, agentEngine().Name, engine.FlagAgent.Name)
	cmd := &cobra.Command{
		Use:   `run [flags] "TASK" | run --task FILE_OR_ID [flags]`,
		Short: "Race agents on a task in forks of the repository; keep the first fix that passes",
		Long: `Fork the repository N times, run an agent in each fork (confined by the
sandbox), judge each fork by its patch as soon as its agent stops (see
'forkbomb judge'), keep the first that passes — or with --all the best — and
kill the rest. Everything is recorded in the runs directory; 'forkbomb apply'
puts the winner on a new branch. A local race's forks are made from the
judge's copy of the base commit, which stays in $FORKBOMB_HOME for the next
race or judgement of that commit ('forkbomb workspace ls': base-…; 'workspace
rm' removes it).

Engines (--engine):
` + eng.Docs() + wrap(pick, "") + `

Each fork's agent — an agent program or CLI with everything it starts,
forkbomb's own loop each shell command — and each test run judging a fork
is bounded by --memory, --pids and --cpus. By default each fork gets
an equal share of the machine's memory (total / forks at work, 512 MiB to
8 GiB) and 2048 processes; the CPUs are shared by the scheduler. A fork
bomb or a memory bomb ends that fork's agent only: its state is "failed"
and its reason names the limit ("memory limit (512 MiB) reached"); the
other forks go on. The limits are enforced by a cgroup where one can be made
('forkbomb sandbox --probe'), else by rlimits per process.

` + verifyHelp + backend.doc() + `
` + exitHelp("run"),
		Example: fmt.Sprintf(`  forkbomb run --engine %s --%s "./my-agent --fast" --test "go test ./..." "fix the failing test"`, agentEngine().Name, engine.FlagAgent.Name),
		Args:    runArgs(&task),
		RunE: func(c *cobra.Command, args []string) error {
			if err := backend.ready(ExitCouldNotRun); err != nil {
				return err
			}
			if task != "" {
				if err := applyTask(c, task, taskFlags{o: &o, es: &eng.Settings, network: &network, limits: &limits}); err != nil {
					return withCode(ExitCouldNotRun, err)
				}
			} else {
				o.Task = args[0]
			}
			var err error
			if o.Allow, err = parseRunNetwork(network, stdio.Err); err != nil {
				return withCode(ExitCouldNotRun, err)
			}
			defer view.close()
			r, dir, err := raceFromFlags(c, stdio, o, eng, prompts, asJSON, limits, &view, backend)
			if err != nil {
				return withCode(ExitCouldNotRun, inRepoHint(err))
			}
			if asJSON {
				if err := printJSON(stdio.Out, r); err != nil {
					return withCode(ExitFailed, err)
				}
			} else {
				fmt.Fprintf(stdio.Out, "run %s: %s", r.ID, r.Status)
				if r.Winner != nil {
					fmt.Fprintf(stdio.Out, ", winner fork %d — forkbomb apply %s", *r.Winner, r.ID)
				}
				if r.Status == event.RunNeedsReview {
					printReview(stdio.Out, r)
				}
				fmt.Fprintln(stdio.Out)
				printStrengths(stdio.Out, r)
				printCompared(stdio.Out, "", r)
				fmt.Fprintf(stdio.Out, "record: %s\n", dir)
			}
			view.hold(c.Context(), stdio)
			switch r.Status {
			case event.RunWon:
				return nil
			case event.RunInterrupted:
				return &exitError{code: ExitInterrupted}
			case event.RunNeedsReview:
				return &exitError{code: ExitNeedsReview}
			case event.RunUnverified:
				return &exitError{code: ExitUnverified}
			}
			return &exitError{code: ExitNoWinner}
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Repo, "repo", ".", "the repository")
	f.StringVar(&o.Rev, "rev", "HEAD", "the base commit")
	f.IntVar(&o.Forks, "forks", 4, "number of forks")
	eng.AddEngine(f, def.Name, fmt.Sprintf("agent engine (the default when the %s CLI is installed; else %s when --%s is given)", def.Bin, agentEngine().Name, engine.FlagAgent.Name))
	eng.AddSettings(f)
	f.IntVar(&o.Parallel, "parallel", 0, "agents running at once (default: every fork)")
	f.StringVar(&prompts, "prompts", "", "a file of prompt variants separated by lines of ---, one per fork")
	f.StringVar(&o.Test, "test", "", "the test command forks are judged by (yours, never read from the repository)")
	f.StringArrayVar(&o.Hidden, "hidden", nil, "hidden tests for the judge (repeatable)")
	f.BoolVar(&o.All, "all", false, "wait for every fork and keep the best, instead of the first that passes")
	addVerifyFlags(f, &o)
	f.DurationVar(&o.Timeout, "timeout", 30*time.Minute, "limit for each fork's agent")
	limits.add(f, "fork")
	f.StringVar(&network, "network", "none", networkHelp)
	f.StringVar(&o.RunsDir, "runs-dir", "", "where runs are recorded (default $FORKBOMB_HOME/runs; never inside the repository)")
	f.BoolVar(&asJSON, "json", false, "print the final summary as JSON")
	eng.AddRecheck(f, "run the canary for the installed agent CLI before racing (forks start only if it passes)")
	view.add(f)
	backend.add(f)
	f.StringVar(&task, "task", "", "race a stored task (its id) or a task .toml file instead of TASK ('forkbomb task --help'); flags given here win")
	return cmd
}

// raceFromFlags completes the race's options from the flags and the state
// home, and races.
func raceFromFlags(c *cobra.Command, stdio IO, o run.Options, eng *EngineFlags, prompts string, asJSON bool, limits limitFlags, view *uiFlags, backend *backendFlags) (*record.Run, string, error) {
	var err error
	if o.Limits, err = limits.limits(); err != nil {
		return nil, "", err
	}
	name, err := pickEngine(eng.Name, c.Flags().Changed("engine"), eng.Settings.Agent, eng.Settings.AgentBin)
	if err != nil {
		return nil, "", err
	}
	s := Setup{Settings: eng.Settings, Allow: o.Allow, Recheck: eng.Recheck}
	backend.setup(&s)
	agent, done, err := ready(c.Context(), stdio, name, s)
	if err != nil {
		return nil, "", err
	}
	defer done()
	o.Engine = agent
	if o.Prompts, err = ReadPrompts(prompts); err != nil {
		return nil, "", err
	}
	l, err := state()
	if err != nil {
		return nil, "", err
	}
	local, err := workspace.Open(l.Workspaces())
	if err != nil {
		return nil, "", err
	}
	closeStore, err := backend.store(c.Context(), &o, local)
	if err != nil {
		return nil, "", err
	}
	defer closeStore()
	o.CacheDir = l.Judge()
	if o.RunsDir == "" {
		o.RunsDir = l.Runs()
	}
	if !asJSON {
		o.Progress = stdio.Err
	}
	if err := view.start(c.Context(), stdio, o.RunsDir, &o); err != nil {
		return nil, "", err
	}
	return run.Race(c.Context(), o)
}

func newRunsCmd(stdio IO) *cobra.Command {
	var asJSON bool
	var runsDir string
	cmd := &cobra.Command{
		Use:   "runs [--json]",
		Short: "List recorded runs: id, task, status, winner, duration",
		Long: withExitHelp(`List the runs recorded in the runs directory, newest first. A run whose
forkbomb is still at work is "running"; one whose forkbomb was killed
before it ended is "interrupted". That is read from a lock the running
forkbomb holds on the run's folder (run.lock), so it holds for a reader in
another pid namespace, and on another host where the runs directory is
shared with working locks (see docs/RECORD.md).`, "runs"),
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			dir, err := runsDirOr(runsDir)
			if err != nil {
				return err
			}
			all, err := record.List(dir)
			if err != nil {
				return err
			}
			if asJSON {
				if all == nil {
					all = []*record.Run{}
				}
				return printJSON(stdio.Out, all)
			}
			w := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tSTATUS\tWINNER\tSECONDS\tTASK")
			for _, r := range all {
				winner := "-"
				if r.Winner != nil {
					winner = fmt.Sprint(*r.Winner)
				}
				task := r.Task
				if len(task) > 50 {
					task = task[:47] + "..."
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%.1f\t%s\n", r.ID, r.Status, winner, r.Seconds, task)
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.Flags().StringVar(&runsDir, "runs-dir", "", "runs directory (default $FORKBOMB_HOME/runs)")
	return cmd
}

// loadRun reads one run from the runs directory (default or --runs-dir).
func loadRun(runsDir, id string) (string, *record.Run, error) {
	dir, err := runsDirOr(runsDir)
	if err != nil {
		return "", nil, err
	}
	r, err := record.Load(dir, id)
	return dir, r, err
}

func newShowCmd(stdio IO) *cobra.Command {
	var runsDir string
	cmd := &cobra.Command{
		Use:   "show RUN",
		Short: "One run: its forks, their verdicts, and the winning patch",
		Long:  withExitHelp("One run: its status (running, won, no-winner, needs-review, unverified or\ninterrupted, as in 'forkbomb runs'), its forks, their verdicts (with the\nfindings of a fork whose verdict is \"review\", and the verifier's share of\nmutants caught with its survivors), passing forks compared on each other's\ntests, and the winning patch.", "show"),
		Args:  exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			dir, r, err := loadRun(runsDir, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(stdio.Out, "run %s — %s\ntask: %s\nrepo: %s at %s\ntest: %s\n\n", r.ID, r.Status, r.Task, r.Repo, r.Base, r.Test)
			for _, f := range r.Fork {
				// A verdict's reason and findings quote what the fork
				// wrote (test names, lines of its patch): escaped, as
				// the progress lines are.
				fmt.Fprintf(stdio.Out, "fork %d: %s (exit %d) %s %s\n", f.N, f.State, f.Exit, f.Verdict, event.Printable(f.Reason))
				for _, line := range f.Findings {
					fmt.Fprintf(stdio.Out, "  finding: %s\n", event.Printable(line))
				}
				for _, line := range f.Warnings {
					fmt.Fprintf(stdio.Out, "  judge's warning: %s\n", event.Printable(line))
				}
				printStrength(stdio.Out, "  ", f, "its patch")
			}
			printCompared(stdio.Out, "", r)
			if r.Status == event.RunNeedsReview {
				printReview(stdio.Out, r)
				fmt.Fprintln(stdio.Out)
			}
			if r.Winner != nil {
				patch, _ := os.ReadFile(filepath.Join(dir, r.ID, "winner.patch"))
				fmt.Fprintf(stdio.Out, "\nwinner: fork %d\n%s", *r.Winner, patch)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&runsDir, "runs-dir", "", "runs directory (default $FORKBOMB_HOME/runs)")
	return cmd
}

func newApplyCmd(stdio IO) *cobra.Command {
	var runsDir, branch string
	fork := -1
	cmd := &cobra.Command{
		Use:   "apply RUN [--branch NAME] [--fork N]",
		Short: "Put a run's winning patch on a new branch of your repository (never the current one)",
		Long: withExitHelp(`Put a run's winning patch on a new branch of your repository, made at the run's
base commit; your current branch and working tree are never changed.

--fork N applies fork N's patch instead, when its verdict is "pass" or
"review" — the way to take a fork of a run that ended needs-review, once a
person has read its findings ('forkbomb show RUN').`, "apply"),
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			dir, r, err := loadRun(runsDir, args[0])
			if err != nil {
				return err
			}
			n, patchFile, err := appliedFork(r, fork)
			if err != nil {
				return err
			}
			patch, err := os.ReadFile(filepath.Join(dir, r.ID, patchFile))
			if err != nil {
				return err
			}
			if branch == "" {
				branch = "forkbomb/" + r.ID
				if fork >= 0 {
					branch += fmt.Sprintf("-fork%d", n)
				}
			}
			commit, err := workspace.Apply(c.Context(), r.Repo, r.Base, patch, branch, fmt.Sprintf("%s\n\nforkbomb run %s, fork %d", r.Task, r.ID, n))
			if err != nil {
				return err
			}
			fmt.Fprintf(stdio.Out, "branch %s at %s (your current branch and working tree are unchanged)\n", branch, commit[:12])
			return nil
		},
	}
	cmd.Flags().StringVar(&runsDir, "runs-dir", "", "runs directory (default $FORKBOMB_HOME/runs)")
	cmd.Flags().StringVar(&branch, "branch", "", "the new branch (default forkbomb/RUN, or forkbomb/RUN-forkN with --fork)")
	cmd.Flags().IntVar(&fork, "fork", -1, `apply this fork's patch (its verdict must be "pass" or "review") instead of the winner's`)
	return cmd
}

// appliedFork is the fork apply takes and its patch file in the run's
// folder: the winner, or the fork asked for when its tests passed.
func appliedFork(r *record.Run, fork int) (int, string, error) {
	if fork < 0 {
		if r.Winner == nil {
			if r.Status == event.RunNeedsReview {
				return 0, "", fmt.Errorf("run %s has no winner: it needs review ('forkbomb show %s'), then 'forkbomb apply %s --fork N'", r.ID, r.ID, r.ID)
			}
			return 0, "", fmt.Errorf("run %s has no winner", r.ID)
		}
		return *r.Winner, "winner.patch", nil
	}
	for _, f := range r.Fork {
		if f.N != fork {
			continue
		}
		if f.Verdict != event.Pass && f.Verdict != event.Review {
			return 0, "", fmt.Errorf("fork %d of run %s did not pass its tests (verdict %q)", fork, r.ID, f.Verdict)
		}
		return fork, filepath.Join("forks", fmt.Sprint(fork), "patch"), nil
	}
	return 0, "", fmt.Errorf("run %s has no fork %d", r.ID, fork)
}

// printReview says which forks need a person's review, and how to take one.
func printReview(w io.Writer, r *record.Run) {
	var ns []string
	for _, f := range r.Fork {
		if f.Verdict == event.Review {
			ns = append(ns, fmt.Sprint(f.N))
		}
	}
	fmt.Fprintf(w, "\nneeds review: fork(s) %s passed the tests, but their patches add code that detects\nor inspects a test run (see the findings: forkbomb show %s); no fork was crowned.\nTo take one after reading it: forkbomb apply %s --fork N", strings.Join(ns, ", "), r.ID, r.ID)
}
