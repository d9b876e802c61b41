package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

type sandboxOptions struct {
	io         IO
	workdir    string
	ro, rw     []string
	network    string
	env        []string
	timeout    time.Duration
	memory     string
	pids       int
	cpus       float64
	maxOutput  string
	probe      bool
	backend    *backendFlags // --probe --backend NAME
	json       bool
	noSandbox  bool
	toolchains bool
	mode       string
	// allowProgs, denyProgs: --allow-program, --deny-program.
	allowProgs, denyProgs []string
	policyRef             string         // --policy
	flags                 *pflag.FlagSet // to tell which flags the user gave
	// settings names the Policy fields this command fills from its flags
	// (or otherwise), for wording a refused policy (sandboxSettings).
	settings map[string]string
}

// sandboxSettings are the Policy fields the sandbox command sets from its
// flags: a refusal names the flag the user passed, not the field.
var sandboxSettings = map[string]string{
	"Command":   "command",
	"Workdir":   "--workdir",
	"ReadOnly":  "--ro",
	"ReadWrite": "--rw",
	"Network":   "--network",
	"Env":       "--env",
	"Timeout":   "--timeout",
	"Memory":    "--memory",
	"Pids":      "--pids",
	"CPUs":      "--cpus",
	"MaxOutput": "--max-output",
	"Mode":      "--mode",
	// programs.go in this package
	"AllowPrograms": "--allow-program",
	"DenyPrograms":  "--deny-program",
}

// workspaceExecSettings: workspace exec has no --workdir; the workspace
// supplies the workdir, its layers and what it hides.
var workspaceExecSettings = func() map[string]string {
	m := map[string]string{"Workdir": "the workspace", "Overlay": "the workspace", "Hide": "a folder the workspace hides"}
	for k, v := range sandboxSettings {
		if k != "Workdir" {
			m[k] = v
		}
	}
	return m
}()

// words is err as one line for the user: a refused policy names the
// setting as this command's user knows it.
func (o *sandboxOptions) words(err error) string {
	var pe *sandbox.PolicyError
	if !errors.As(err, &pe) {
		return err.Error()
	}
	name, ok := o.settings[pe.Field]
	if !ok {
		return err.Error()
	}
	return pe.Setting(name).Message()
}

func newSandboxCmd(stdio IO, b build) *cobra.Command {
	o := &sandboxOptions{io: stdio, settings: sandboxSettings, backend: newBackendFlags(b)}
	cmd := &cobra.Command{
		Use:   "sandbox [flags] -- COMMAND [ARG...]",
		Short: "Run one command confined by the kernel",
		Long: `Run COMMAND so that the kernel, not the command, decides what it can touch.

Inside, the command sees the host read-only, with every home directory
replaced by an empty one (so ~/.ssh, ~/.aws, ~/.config and the like are
unreachable), its own empty $HOME, a private /tmp that is removed afterwards,
its own loopback and no other network, its own process table, no capability
and a seccomp filter. It may write only to --workdir (default: the current
directory), to --rw paths and to its temp dir; .git directories stay
read-only even there. Its environment is an allowlist (PATH, USER, LANG,
SHELL, TERM, HOME, TMPDIR, plus --env); no API key or token reaches it.
Every process it starts dies when it exits or times out.

The layers are user, mount, pid, network, IPC and UTS namespaces, Landlock,
seccomp, cgroups and rlimits; where user namespaces are refused, Landlock and
seccomp confine alone. On macOS a Seatbelt profile confines it instead (the
loopback is the host's there, and memory, process and CPU limits are not
enforced). 'forkbomb sandbox --probe' shows what works here.
forkbomb never falls back to running unconfined unless --no-sandbox is given.

` + exitHelp("sandbox"),
		Example: `  forkbomb sandbox -- go test ./...
  forkbomb sandbox --workdir ./repo --timeout 10m --memory 4G --pids 512 -- make test
  forkbomb sandbox --toolchains -- cargo build --offline
  forkbomb sandbox --probe --json` + o.backend.probeExamples(),
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return o.run(c.Context(), args)
		},
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitError{code: ExitSetup, msg: fmt.Sprintf("%v (see 'forkbomb sandbox --help')", err)}
	})
	f := cmd.Flags()
	f.SetInterspersed(false)
	f.StringVar(&o.workdir, "workdir", "", "the only place the command may write besides its temp dir, and its cwd (default: current directory)")
	o.addFlags(f)
	f.BoolVar(&o.probe, "probe", false, "report which layers work on this machine and which init serves (with --backend: what that backend enforces), and exit")
	f.BoolVar(&o.json, "json", false, "with --probe: print the report as JSON")
	o.backend.add(f)
	f.BoolVar(&o.noSandbox, "no-sandbox", false, "run UNCONFINED (development only; warns loudly)")
	return cmd
}

// addFlags registers the confinement flags shared by every command that
// runs something in a sandbox.
func (o *sandboxOptions) addFlags(f *pflag.FlagSet) {
	f.StringArrayVar(&o.ro, "ro", nil, "extra path made readable, e.g. inside a hidden home (repeatable)")
	f.StringArrayVar(&o.rw, "rw", nil, "extra writable path (repeatable)")
	enumVar(f, &o.network, "network", string(sandbox.NetworkNone), "none: a loopback of its own, no DNS; host: the host network (warns)", string(sandbox.NetworkNone), string(sandbox.NetworkHost))
	f.StringArrayVar(&o.env, "env", nil, "pass one more variable from your environment (repeatable; credential-like names are refused)")
	f.DurationVar(&o.timeout, "timeout", 0, "wall-clock limit, e.g. 30s or 10m; then every process dies and forkbomb exits 124")
	f.StringVar(&o.memory, "memory", "", "memory limit, e.g. 512M or 4G")
	f.IntVar(&o.pids, "pids", 0, "maximum number of processes and threads")
	f.Float64Var(&o.cpus, "cpus", 0, "CPU quota in cores, e.g. 1.5 (needs a cgroup)")
	f.StringVar(&o.maxOutput, "max-output", "", "cap on stdout+stderr together, e.g. 1M; the command is killed when it is exceeded (exit 137)")
	f.BoolVar(&o.toolchains, "toolchains", false, "make toolchains kept under home readable: "+fmt.Sprint(sandbox.ToolchainDirs))
	var modes []string
	for _, m := range sandbox.Modes() {
		modes = append(modes, string(m))
	}
	enumVar(f, &o.mode, "mode", string(sandbox.ModeAuto), "backend (for diagnosis; auto picks by trial)", modes...)
	addProgramFlags(f, o)
	o.flags = f
}

func (o *sandboxOptions) run(ctx context.Context, args []string) error {
	if o.probe {
		return o.backend.probe(ctx, o.io, o.json)
	}
	if len(args) == 0 {
		return &exitError{code: ExitSetup, msg: "no command given (usage: forkbomb sandbox [flags] -- COMMAND [ARG...])"}
	}
	p, err := o.policy(args)
	if err != nil {
		return err
	}
	// Leftovers of killed forkbomb processes, removed while the sandbox
	// starts (nothing of this run is among them); joined before the exit.
	reclaimed := make(chan struct{})
	go func() { defer close(reclaimed); sandbox.ReclaimStale() }()
	defer func() { <-reclaimed }()
	if o.noSandbox {
		fmt.Fprintln(o.io.Err, "forkbomb: WARNING: --no-sandbox: the command runs UNCONFINED with your full access to this machine, its files and its network")
	} else if sandbox.Notice != "" {
		fmt.Fprintln(o.io.Err, "forkbomb: note: "+sandbox.Notice)
	}
	stdio := sandbox.Stdio{Stdin: o.io.In, Stdout: o.io.Out, Stderr: o.io.Err}
	if os.Getenv("FORKBOMB_TRACE_START") != "" {
		stdio.Trace = o.io.Err // where a start's time goes (bench/README.md)
	}
	return o.finish(sandbox.Run(ctx, p, stdio))
}

// policy turns the flags into a sandbox policy for args.
func (o *sandboxOptions) policy(args []string) (sandbox.Policy, error) {
	if err := o.applyPolicy(o.flags); err != nil {
		return sandbox.Policy{}, err
	}
	p := sandbox.Policy{
		Command:    args,
		Workdir:    o.workdir,
		ReadOnly:   o.ro,
		ReadWrite:  o.rw,
		Network:    sandbox.Network(o.network),
		Env:        o.env,
		Timeout:    o.timeout,
		Pids:       o.pids,
		CPUs:       o.cpus,
		Toolchains: o.toolchains,
		Mode:       sandbox.Mode(o.mode),
		NoSandbox:  o.noSandbox,
	}
	var err error
	if p.AllowPrograms, p.DenyPrograms, err = o.programs(); err != nil {
		return p, err
	}
	if o.memory != "" {
		if p.Memory, err = parseSize(o.memory); err != nil {
			return p, &exitError{code: ExitSetup, msg: "--memory: " + err.Error(), err: err}
		}
	}
	if o.maxOutput != "" {
		if p.MaxOutput, err = parseSize(o.maxOutput); err != nil {
			return p, &exitError{code: ExitSetup, msg: "--max-output: " + err.Error(), err: err}
		}
	}
	if p.Network == sandbox.NetworkHost && !o.noSandbox {
		fmt.Fprintln(o.io.Err, "forkbomb: warning: --network host: the command can reach your network, its services and the internet")
	}
	return p, nil
}

// finish turns a sandbox result into the process's exit status.
func (o *sandboxOptions) finish(res *sandbox.Result, err error) error {
	if res != nil {
		for _, w := range res.Warnings {
			fmt.Fprintf(o.io.Err, "forkbomb: warning: %s\n", w)
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return &exitError{code: ExitInterrupted, msg: "interrupted; every process of the command was killed", err: err}
	case errors.Is(err, sandbox.ErrCommandNotFound):
		return &exitError{code: ExitNotFound, msg: err.Error(), err: err}
	case errors.Is(err, sandbox.ErrCommandNotExecutable):
		return &exitError{code: ExitNotExecutable, msg: err.Error(), err: err}
	case err != nil:
		return &exitError{code: ExitSetup, msg: o.words(err), err: err}
	}
	switch {
	case res.TimedOut:
		return &exitError{code: res.ExitCode, msg: fmt.Sprintf("timed out after %s; every process of the command was killed", o.timeout)}
	case res.Limit != "":
		return &exitError{code: res.ExitCode, msg: fmt.Sprintf("the %s limit was exceeded; the command was killed", res.Limit)}
	case res.ExitCode != 0:
		return &exitError{code: res.ExitCode}
	}
	return nil
}
