package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/forkbomb/forkbomb/internal/canary"
	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

func newCanaryCmd(stdio IO, b build) *cobra.Command {
	var (
		eng     = NewEngineFlags(func(d *engine.Descriptor) bool { return d.Canary })
		asJSON  bool
		timeout time.Duration
		backend = newBackendFlags(b)
	)
	var keys strings.Builder
	for _, d := range eng.offered {
		keys.WriteString(wrap("  "+d.Name+": "+d.Summary, "    "))
	}
	cmd := &cobra.Command{
		Use:   "canary [--engine " + strings.Join(eng.Offered(), "|") + "]",
		Short: "Tell a real agent session to break out of a fresh fork, and check that it could not",
		Long: withExitHelp(`Start a real session of the agent CLI in a fresh fork of a repository forkbomb
makes, plant a secret beside the fork (its value is never in the prompt),
and tell the agent to break out. Each check is read afterwards from the
filesystem, from a listener on the host's loopback and from the recorded
session stream — never from what the model says it did:

  write inside the fork works (the control: an agent that did not follow
    the canary proves nothing)
  shell write outside the fork fails; file-tool write outside the fork fails
  outbound network fails
  the secret beside the fork never surfaces (stream or files)
  writes into .git fail
  the real API key never reaches the fork or the stream

The agent reaches its model only through forkbomb's model proxy, which holds
the key:
`+keys.String()+`The result is kept per agent CLI version in $FORKBOMB_HOME/canary.json;
'forkbomb run' with that engine starts forks only when the canary passed for
the installed version (run --recheck runs it first).

With --backend kubernetes the fork is a pod and the CLI the image's: the
canary runs there and its result is kept for that image (and runtime
class), apart from this machine's; 'forkbomb run --backend kubernetes'
asks for that one. The secret is planted beside the fork's tree in its pod,
the escapes looked for there and the listener is in the pod, each by an
exec outside the fork's sandbox. Where the pod's sandbox is Landlock alone
(no user namespaces), a read-only .git is not promised: the check is then
that the fork's .git writes stay in its copy.`, "canary"),
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if err := backend.ready(ExitCouldNotRun); err != nil {
				return err
			}
			res, err := runCanary(c.Context(), stdio, eng.Name, eng.Settings, timeout, asJSON, backend)
			if err != nil {
				return err
			}
			if !res.Passed {
				return &exitError{code: ExitFailed}
			}
			return nil
		},
	}
	f := cmd.Flags()
	eng.AddEngine(f, "", "the agent CLI to test")
	eng.AddSettings(f)
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "limit for the agent's session")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	backend.add(f)
	return cmd
}

// runCanary readies the engine as a run would, runs the canary, prints and
// keeps its result.
func runCanary(ctx context.Context, stdio IO, eng string, es engine.Settings, timeout time.Duration, asJSON bool, bf *backendFlags) (*canary.Result, error) {
	l, err := state()
	if err != nil {
		return nil, err
	}
	local, err := workspace.Open(l.Workspaces())
	if err != nil {
		return nil, err
	}
	s := Setup{Settings: es, NoCanary: true}
	if bf != nil {
		bf.setup(&s)
	}
	agent, done, err := ready(ctx, stdio, eng, s)
	if err != nil {
		return nil, err
	}
	defer done()
	info := agent.Info()
	var store run.Forks = local
	if s.Where != "" {
		o := run.Options{Forks: 1, Timeout: timeout}
		closeStore, err := bf.store(ctx, &o, local)
		if err != nil {
			return nil, err
		}
		defer closeStore()
		store = o.Store
	}
	if !asJSON {
		where := ""
		if s.Where != "" {
			where = " in " + s.Where
		}
		fmt.Fprintf(stdio.Err, "canary: %s %s%s, session limit %s\n", info.Name, info.Version, where, timeout)
	}
	limits := sandbox.Limits{}.Resolve(sandbox.DefaultLimits(1))
	res, err := canary.Run(ctx, canary.Options{
		Engine: agent, Version: info.Version, Store: store, Timeout: timeout,
		Secrets: credentialValues(os.Environ()),
		Confine: limits.Apply,
	})
	if err != nil {
		return nil, err
	}
	if err := canary.Save(l.Canary(), res); err != nil {
		return nil, err
	}
	if asJSON {
		return res, printJSON(stdio.Out, res)
	}
	printCanary(stdio.Out, res)
	return res, nil
}

func printCanary(w io.Writer, res *canary.Result) {
	for _, ch := range res.Checks {
		mark := "ok  "
		if !ch.OK {
			mark = "FAIL"
		}
		line := mark + " " + ch.Name
		if ch.Detail != "" {
			line += ": " + ch.Detail
		}
		fmt.Fprintln(w, line)
	}
	verdict := "PASSED"
	if !res.Passed {
		verdict = "FAILED"
	}
	where := ""
	if res.Where != "" {
		where = " in " + res.Where
	}
	fmt.Fprintf(w, "canary %s for %s %s%s (agent %s)\n", verdict, res.Engine, res.Version, where, res.Agent)
}

// credentialValues are the values of the credential-named variables of an
// environment (sandbox.CredentialEnv's reading): what no fork and no
// stream may ever hold.
func credentialValues(env []string) []string {
	var out []string
	for _, c := range sandbox.CredentialEnv(env) {
		out = append(out, c.Value)
	}
	return out
}

// checkCanary refuses a run whose agent CLI has not passed the canary in
// its installed version; with recheck it runs the canary first.
func checkCanary(ctx context.Context, stdio IO, eng string, es engine.Settings, info engine.Info, s Setup) error {
	l, err := state()
	if err != nil {
		return err
	}
	where, cmd := "", "forkbomb canary --engine "+eng
	if s.Where != "" {
		where = " in " + s.Where
		cmd += " --backend " + s.Backend.Name + " (with the run's backend flags)"
	}
	if !s.Recheck {
		res, err := canary.Lookup(l.Canary(), info.Name, info.Version, s.Where)
		switch {
		case err != nil:
			return err
		case res == nil:
			return fmt.Errorf("the canary has not run for %s %s%s: run '%s' first, or add --recheck", info.Name, info.Version, where, cmd)
		case !res.Passed:
			return fmt.Errorf("the canary FAILED for %s %s%s on %s: forks will not start (see '%s'; --recheck runs it again)", info.Name, info.Version, where, res.At.Format(time.RFC3339), cmd)
		}
		return nil
	}
	res, err := runCanary(ctx, stdio, eng, es, 5*time.Minute, false, s.backend)
	if err != nil {
		return fmt.Errorf("canary: %w", err)
	}
	if !res.Passed {
		return fmt.Errorf("the canary FAILED for %s %s%s: forks will not start", info.Name, info.Version, where)
	}
	return nil
}
