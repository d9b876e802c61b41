package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/forkbomb/forkbomb/internal/home"
	"github.com/forkbomb/forkbomb/internal/lab"
	"github.com/forkbomb/forkbomb/internal/sandbox"
)

const policyLong = `A policy is a TOML file saying what a fork may do. Every key is spelt as
the flag of the same name, and a key left out is that flag left out, so the
built-in policy "default" is exactly forkbomb's defaults:

  network          = "none"            # none, host (sandbox only), allow:HOST[,HOST…] (run only)
  readable         = ["/srv/data"]     # --ro
  writable         = ["/srv/out"]      # --rw
  env              = ["GOFLAGS"]       # --env
  allowed_programs = ["/usr/bin"]      # --allow-program: nothing else executes
  denied_programs  = ["/usr/bin/curl"] # --deny-program: deny wins
  memory           = "4G"              # or "none"
  pids             = 512
  cpus             = 1.5
  timeout          = "10m"
  max_output       = "1M"
  toolchains       = false

Unknown keys and bad values are refused with the file, line and key.
Stored policies live in $FORKBOMB_HOME/lab/policies/; 'forkbomb sandbox
--policy FILE_OR_ID' and a task's policy key use them. 'forkbomb policy show'
prints how strongly each setting holds on this machine.`

const taskLong = `A task is a TOML file holding what 'forkbomb run' takes from its flags:

  repo   = "."
  rev    = "HEAD"
  prompt = "fix the failing test"
  test   = "go test ./..."
  hidden = ["/srv/hidden-tests"]
  engine = "command"
  agent  = "./my-agent"
  model  = "claude-sonnet-5-5"
  forks  = 4
  policy = "strict"            # a stored policy's id or a .toml file

prompt and test are required. Run it with 'forkbomb run --task FILE_OR_ID';
flags given on the command line win over the task. Stored tasks live in
$FORKBOMB_HOME/lab/tasks/. 'forkbomb task mine' makes tasks of your
repository's own recent commits.`

func labStore() (*lab.Store, error) {
	l, err := state()
	if err != nil {
		return nil, err
	}
	return lab.Open(l), nil
}

func newPolicyCmd(stdio IO) *cobra.Command {
	cmd := &cobra.Command{Use: "policy", Short: "Stored sandbox policies: ls, add, rm, show", Long: policyLong}
	cmd.AddCommand(labLs(stdio, lab.KindPolicy), labAdd(stdio, lab.KindPolicy), labRm(stdio, lab.KindPolicy), newPolicyShowCmd(stdio))
	return cmd
}

func newTaskCmd(stdio IO) *cobra.Command {
	cmd := &cobra.Command{Use: "task", Short: "Stored tasks for 'forkbomb run --task': ls, add, rm, mine", Long: taskLong}
	cmd.AddCommand(labLs(stdio, lab.KindTask), labAdd(stdio, lab.KindTask), labRm(stdio, lab.KindTask), newTaskMineCmd(stdio))
	return cmd
}

func labLs(stdio IO, k lab.Kind) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls [--json]",
		Short: fmt.Sprintf("List stored %ss", k),
		Args:  exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			s, err := labStore()
			if err != nil {
				return err
			}
			ids, err := s.List(k)
			if err != nil {
				return err
			}
			if asJSON {
				if ids == nil {
					ids = []string{}
				}
				return json.NewEncoder(stdio.Out).Encode(ids)
			}
			for _, id := range ids {
				if k == lab.KindPolicy && id == lab.DefaultPolicy {
					fmt.Fprintf(stdio.Out, "%s\t(built in: forkbomb's defaults)\n", id)
					continue
				}
				fmt.Fprintln(stdio.Out, id)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func labAdd(stdio IO, k lab.Kind) *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "add FILE [--name ID]",
		Short: fmt.Sprintf("Check a %s file and store it (as its file name without .toml, or --name)", k),
		Args:  exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			s, err := labStore()
			if err != nil {
				return err
			}
			id := name
			if id == "" {
				id = strings.TrimSuffix(filepath.Base(args[0]), ".toml")
			}
			if err := home.ValidateID(string(k), id); err != nil {
				return fmt.Errorf("%w (name it with --name)", err)
			}
			data, err := readUserFile(args[0])
			if err != nil {
				return err
			}
			if k == lab.KindPolicy {
				_, err = lab.ParsePolicy(args[0], data)
			} else {
				_, err = lab.ParseTask(args[0], data)
			}
			if err != nil {
				return err // named by the user's file, not the store's
			}
			if err := s.Add(k, id, data); err != nil {
				return err
			}
			fmt.Fprintf(stdio.Out, "%s %s stored\n", k, id)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the id to store it as ([A-Za-z0-9_-])")
	return cmd
}

func labRm(stdio IO, k lab.Kind) *cobra.Command {
	return &cobra.Command{
		Use:   "rm ID",
		Short: fmt.Sprintf("Remove a stored %s", k),
		Args:  exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			s, err := labStore()
			if err != nil {
				return err
			}
			if err := s.Remove(k, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(stdio.Out, "%s %s removed\n", k, args[0])
			return nil
		},
	}
}

func newPolicyShowCmd(stdio IO) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show FILE_OR_ID [--json]",
		Short: "Print every setting of a policy with how strongly it holds on this machine, and the test that proves it",
		Long: `Print every setting of a policy with its tier on this machine — kernel,
forkbomb, requested or none, as in docs/SECURITY.md — for the backend this
machine gets (found by trial, as 'forkbomb sandbox --probe' does), and the
test that attacks it. The notes say what a setting does not cover.`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			s, err := labStore()
			if err != nil {
				return err
			}
			p, err := s.LoadPolicy(args[0])
			if err != nil {
				return err
			}
			rep, err := sandbox.Probe(c.Context())
			if err != nil {
				return fmt.Errorf("probe the sandbox: %w", err)
			}
			m := lab.MachineFrom(rep)
			rows := lab.Show(p, m)
			if asJSON {
				return printJSON(stdio.Out, struct {
					Policy   string    `json:"policy"`
					Backend  string    `json:"backend"`
					Cgroup   bool      `json:"cgroup"`
					Notice   string    `json:"notice,omitempty"`
					Settings []lab.Row `json:"settings"`
				}{args[0], string(m.Backend), m.Cgroup, rep.Notice, rows})
			}
			writeShow(stdio.Out, args[0], m, rows, rep.Notice)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}

func writeShow(out io.Writer, name string, m lab.Machine, rows []lab.Row, notice string) {
	cg := "a cgroup"
	if !m.Cgroup {
		cg = "no cgroup"
	}
	fmt.Fprintf(out, "policy %s on this machine: backend %s, %s\n", name, m.Backend, cg)
	if notice != "" {
		fmt.Fprintf(out, "note: %s\n", notice)
	}
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SETTING\tVALUE\tTIER\tTEST")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", r.Setting, r.Value, r.Tier, r.Test)
	}
	w.Flush()
	fmt.Fprintln(out)
	for _, r := range rows {
		if r.Note != "" {
			fmt.Fprintf(out, "%s: %s\n", r.Setting, r.Note)
		}
	}
}

// readUserFile reads a file the user named, bounded.
func readUserFile(path string) ([]byte, error) { return lab.ReadFile(path) }
