package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

func newWorkspaceCmd(stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "workspace",
		Aliases: []string{"ws"},
		Short:   "Pristine snapshots of a repository, O(1) forks of them, and their patches",
		Long: `A workspace is a copy of a repository an agent can work in.

'workspace new' makes a pid 1: a pristine snapshot of one commit of your
repository (never written to), whose history holds that commit and its
ancestors only — no other branch, tag, stash or remote. Where the store
keeps a pid 1 of an ancestor of that commit (the previous commit's, say),
the new one can share its history's files (hard links) and copy only the
commits after it. 'workspace fork'
makes an O(1) fork (an overlayfs layer, or a reflink or plain copy where
overlayfs is unavailable; 'workspace ls' shows which). 'workspace exec'
runs a command confined in one; 'workspace diff' prints the patch it would
ship, computed outside it.

State lives in $FORKBOMB_HOME/workspaces (default ~/.forkbomb), never inside
the repository.

` + exitHelp("workspace") + `
'workspace exec' passes the status of the command, as 'forkbomb sandbox' does.`,
	}
	cmd.AddCommand(newWSNewCmd(stdio), newWSForkCmd(stdio), newWSExecCmd(stdio), newWSDiffCmd(stdio), newWSLsCmd(stdio), newWSRmCmd(stdio), newWSPruneCmd(stdio))
	return cmd
}

func newWSNewCmd(stdio IO) *cobra.Command {
	var repo, rev string
	var withChanges bool
	cmd := &cobra.Command{
		Use:   "new NAME [--repo DIR] [--rev REV] [--with-changes]",
		Short: "Make a pristine snapshot (pid 1) of a commit",
		Args:  exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			s, err := openStore()
			if err != nil {
				return err
			}
			m, err := s.New(c.Context(), args[0], workspace.NewOptions{Repo: repo, Rev: rev, WithChanges: withChanges})
			if err != nil {
				return err
			}
			fmt.Fprintf(stdio.Out, "%s: pid 1 of %s at %s\n", m.Name, m.Repo, short(m.Base))
			return nil
		},
	}
	cmd.Flags().StringVar(&repo, "repo", ".", "the repository")
	cmd.Flags().StringVar(&rev, "rev", "HEAD", "the commit to snapshot")
	cmd.Flags().BoolVar(&withChanges, "with-changes", false, "include uncommitted tracked and untracked changes (with --rev HEAD)")
	return cmd
}

func newWSForkCmd(stdio IO) *cobra.Command {
	return &cobra.Command{
		Use:   "fork SRC DST",
		Short: "Fork a workspace in O(1)",
		Args:  exactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			s, err := openStore()
			if err != nil {
				return err
			}
			m, err := s.Fork(c.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(stdio.Out, "%s: fork of %s (%s)\n", m.Name, m.Source, m.Method)
			return nil
		},
	}
}

func newWSExecCmd(stdio IO) *cobra.Command {
	o := &sandboxOptions{io: stdio, settings: workspaceExecSettings}
	cmd := &cobra.Command{
		Use:   "exec NAME [sandbox flags] -- COMMAND [ARG...]",
		Short: "Run a command confined in a workspace (cwd: its root)",
		Long: `Run COMMAND confined in workspace NAME, as 'forkbomb sandbox' does, with the
workspace as the only writable tree and its .git read-only. In a pid 1 the
command runs over a throwaway layer: a pid 1 never changes. Exit statuses are
those of 'forkbomb sandbox'.

` + exitHelp("workspace exec"),
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) < 2 {
				return &exitError{code: ExitSetup, msg: "no command given (usage: forkbomb workspace exec NAME [flags] -- COMMAND [ARG...])"}
			}
			s, err := openStore()
			if err != nil {
				return &exitError{code: ExitSetup, msg: err.Error()}
			}
			p, err := o.policy(args[1:])
			if err != nil {
				return err
			}
			sio := sandbox.Stdio{Stdin: stdio.In, Stdout: stdio.Out, Stderr: stdio.Err}
			if os.Getenv("FORKBOMB_TRACE_START") != "" {
				sio.Trace = stdio.Err // where a start's time goes (bench/README.md)
			}
			res, err := s.Exec(c.Context(), args[0], p, sio)
			if err != nil && !errors.Is(err, context.Canceled) && !isSandboxErr(err) {
				return &exitError{code: ExitSetup, msg: err.Error()}
			}
			return o.finish(res, err)
		},
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitError{code: ExitSetup, msg: fmt.Sprintf("%v (see 'forkbomb workspace exec --help')", err)}
	})
	o.addFlags(cmd.Flags()) // flags between NAME and "--"; everything after "--" is the command
	return cmd
}

func isSandboxErr(err error) bool {
	for _, e := range []error{sandbox.ErrInvalidPolicy, sandbox.ErrSetup, sandbox.ErrUnsupported, sandbox.ErrCommandNotFound, sandbox.ErrCommandNotExecutable} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func newWSDiffCmd(stdio IO) *cobra.Command {
	var stat bool
	cmd := &cobra.Command{
		Use:   "diff NAME [--stat]",
		Short: "Print the patch a workspace would ship, against its base",
		Args:  exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			s, err := openStore()
			if err != nil {
				return err
			}
			d, err := s.Diff(c.Context(), args[0], stat)
			if err != nil {
				return err
			}
			for _, x := range d.Excluded {
				fmt.Fprintf(stdio.Err, "forkbomb: left out of the patch (git metadata): %s\n", x)
			}
			if stat {
				_, err = stdio.Out.Write([]byte(d.Stat))
			} else {
				_, err = stdio.Out.Write(d.Patch)
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&stat, "stat", false, "a summary instead of the patch")
	return cmd
}

func newWSLsCmd(stdio IO) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls [--json]",
		Short: "List workspaces",
		Args:  exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			s, err := openStore()
			if err != nil {
				return err
			}
			all, err := s.List(c.Context())
			if err != nil {
				return err
			}
			if asJSON {
				if all == nil {
					all = []*workspace.Meta{}
				}
				return printJSON(stdio.Out, all)
			}
			w := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tKIND\tMETHOD\tSOURCE\tBASE\tCREATED")
			for _, m := range all {
				src := m.Source
				if m.Kind == workspace.KindPid1 {
					src = m.Repo
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, m.Kind, m.Method, src, short(m.Base), m.Created.Local().Format(time.DateTime))
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func newWSRmCmd(stdio IO) *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME...",
		Short: "Remove workspaces (a pid 1 only once its forks are gone)",
		Long: `Remove workspaces. A pid 1 is removed only once its forks are gone, a
workspace only when no command runs in it, and a kept base (base-…) only
when no running forkbomb holds it (a race or judgement of that commit).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			s, err := openStore()
			if err != nil {
				return err
			}
			var errs []error
			for _, name := range args {
				if err := s.Remove(c.Context(), name); err != nil {
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		},
	}
}

func newWSPruneCmd(stdio IO) *cobra.Command {
	var bases, dryRun, asJSON bool
	cmd := &cobra.Command{
		Use:   "prune [--bases] [--dry-run] [--json]",
		Short: "Remove what killed forkbomb runs left, and with --bases the kept copies of bases",
		Long: `Remove the temporary workspaces a forkbomb that was killed left behind:
a race's forks (and its own pid 1, run-…, on a cluster), a judged run's
fork (judge-run-…), and the snapshots and forks of bisect, mutant
experiments, task mine and the canary. Each is leased to the forkbomb that
made it, by a lock the kernel lets go when that process ends however it
ends; one whose lock nobody holds is removed, forks before their pid 1. A
race starts by doing the same. A running forkbomb's are left; so are
workspaces made by 'workspace new' and 'workspace fork', and those an
older forkbomb made (with no lease: 'workspace rm' them).

--bases also removes the copies forkbomb keeps of each base a race or
judgement used (base-…, and the judge-… ones older forkbombs kept), where
nothing is forked from them, no command runs in them and no running
forkbomb holds them, and with each what the judge keeps for it in
$FORKBOMB_HOME/judge/bases: its baselines and the Go build caches they
filled. They are a cache: the next race of that commit makes its copy
again (sharing the files of a kept ancestor's, if one is left) and runs
its baseline again. What forkbombs before this one kept at the top of
$FORKBOMB_HOME/judge (gocache-…, baseline-….json) is not theirs to know
and is left: remove it by hand when no forkbomb runs. A base removed with
'workspace rm' leaves its judge cache, which the next judgement of that
commit uses again. Every prune also removes what an interrupted one set
aside there.

--dry-run only lists what would be removed, and what would be kept and why
(a fork, a command running in it, a running forkbomb using it).`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			l, err := state()
			if err != nil {
				return err
			}
			s, err := workspace.Open(l.Workspaces())
			if err != nil {
				return err
			}
			o := workspace.PruneOptions{DryRun: dryRun}
			if bases {
				o.Also = judge.IsBase
				o.Forget = func(m *workspace.Meta) error {
					if !judge.IsBase(m) {
						return nil
					}
					return judge.ForgetBase(l.Judge(), m.Name)
				}
			}
			p, err := s.Prune(c.Context(), o)
			if err != nil {
				return err
			}
			if !dryRun {
				// what ForgetBase set aside, this prune's and a killed one's
				if err := judge.SweepForgotten(l.Judge()); err != nil {
					p.Errors = append(p.Errors, "the judge's cache: "+err.Error())
				}
			}
			var failed error
			if len(p.Errors) > 0 {
				failed = fmt.Errorf("prune: %s", strings.Join(p.Errors, "; "))
			}
			if asJSON {
				return errors.Join(printJSON(stdio.Out, p), failed)
			}
			verb := "removed"
			if dryRun {
				verb = "would remove"
			}
			for _, n := range p.Removed {
				fmt.Fprintf(stdio.Out, "%s %s\n", verb, n)
			}
			for _, k := range p.Kept {
				fmt.Fprintf(stdio.Out, "kept %s\n", k)
			}
			if len(p.Removed) == 0 {
				fmt.Fprintf(stdio.Err, "nothing to remove\n")
			}
			return failed
		},
	}
	cmd.Flags().BoolVar(&bases, "bases", false, "also remove the kept copies of bases nothing uses now")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be removed, remove nothing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was removed and kept as JSON")
	return cmd
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// exactArgs is cobra.ExactArgs with a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf("%w: %s takes %d argument(s), got %d (see '%s --help')", errUsage, c.Name(), n, len(args), c.CommandPath())
		}
		return nil
	}
}
