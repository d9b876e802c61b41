package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/lab"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// applyPolicy fills the sandbox flags the user left out from the policy
// named by --policy; lists (--ro, --rw, --env, programs) are joined. So a
// policy is exactly a set of flags, and "default" is none.
func (o *sandboxOptions) applyPolicy(f *pflag.FlagSet) error {
	if o.policyRef == "" {
		return nil
	}
	s, err := labStore()
	if err != nil {
		return &exitError{code: ExitSetup, msg: "--policy: " + err.Error(), err: err}
	}
	p, err := s.LoadPolicy(o.policyRef)
	if err != nil {
		return &exitError{code: ExitSetup, msg: "--policy: " + err.Error(), err: err}
	}
	if strings.HasPrefix(p.Network, "allow:") {
		return &exitError{code: ExitSetup, msg: fmt.Sprintf("--policy %s: network %q is for races ('forkbomb run'); a sandbox takes none or host", o.policyRef, p.Network)}
	}
	unset := func(name string) bool { return !f.Changed(name) }
	if unset("network") && p.Network != "" {
		o.network = p.Network
	}
	o.ro = join(p.Readable, o.ro)
	o.rw = join(p.Writable, o.rw)
	o.env = join(p.Env, o.env)
	o.allowProgs = join(p.AllowedPrograms, o.allowProgs)
	o.denyProgs = join(p.DeniedPrograms, o.denyProgs)
	if unset("memory") && p.Memory != "" && p.Memory != "none" {
		o.memory = p.Memory
	}
	if unset("pids") && p.Pids > 0 {
		o.pids = p.Pids
	}
	if unset("cpus") && p.CPUs > 0 {
		o.cpus = p.CPUs
	}
	if unset("timeout") && p.Timeout != "" {
		d, _ := time.ParseDuration(p.Timeout) // checked by the lab
		o.timeout = d
	}
	if unset("max-output") && p.MaxOutput != "" {
		o.maxOutput = p.MaxOutput
	}
	if unset("toolchains") && p.Toolchains {
		o.toolchains = true
	}
	return nil
}

// taskFlags are the run flags a task can fill.
type taskFlags struct {
	o       *run.Options
	es      *engine.Settings
	network *string
	limits  *limitFlags
}

// applyTask fills the run flags the user left out from the task named by
// ref, and from the task's policy: network and limits through their
// flags, the rest (readable, writable, env, programs, max_output,
// toolchains) added to every agent command's confinement.
func applyTask(c *cobra.Command, ref string, tf taskFlags) error {
	s, err := labStore()
	if err != nil {
		return err
	}
	t, err := s.LoadTask(ref)
	if err != nil {
		return fmt.Errorf("--task: %w", err)
	}
	f := c.Flags()
	unset := func(name string) bool { return !f.Changed(name) }
	setS := func(flag string, dst *string, v string) {
		if unset(flag) && v != "" {
			*dst = v
		}
	}
	tf.o.Task = t.Prompt
	setS("repo", &tf.o.Repo, t.Repo)
	setS("rev", &tf.o.Rev, t.Rev)
	setS("test", &tf.o.Test, t.Test)
	if unset("engine") && t.Engine != "" {
		// as if given: the task's engine, not the one a run picks
		// without --engine (pickEngine)
		if err := f.Set("engine", t.Engine); err != nil {
			return fmt.Errorf("--task: engine: %w", err)
		}
	}
	setS(engine.FlagAgent.Name, &tf.es.Agent, t.Agent)
	setS(engine.FlagModel.Name, &tf.es.Model, t.Model)
	if unset("hidden") {
		tf.o.Hidden = t.Hidden
	}
	if unset("forks") && t.Forks > 0 {
		tf.o.Forks = t.Forks
	}
	ref = t.Policy
	if ref == "" {
		ref = lab.DefaultPolicy
	}
	p, err := s.LoadPolicy(ref)
	if err != nil {
		return fmt.Errorf("--task %s: policy: %w", t.Prompt, err)
	}
	if p.MaxOutput != "" {
		if _, err := sandbox.ParseBytes(p.MaxOutput); err != nil {
			return fmt.Errorf("--task: policy %s: max_output: %w", ref, err)
		}
	}
	if len(p.Readable)+len(p.Writable)+len(p.Env)+len(p.AllowedPrograms)+len(p.DeniedPrograms) > 0 || p.MaxOutput != "" || p.Toolchains {
		pol := *p
		tf.o.Confine = func(sp *sandbox.Policy) {
			sp.ReadOnly = join(sp.ReadOnly, pol.Readable)
			sp.ReadWrite = join(sp.ReadWrite, pol.Writable)
			sp.Env = join(sp.Env, pol.Env)
			sp.AllowPrograms = join(sp.AllowPrograms, pol.AllowedPrograms)
			sp.DenyPrograms = join(sp.DenyPrograms, pol.DeniedPrograms)
			if pol.MaxOutput != "" {
				sp.MaxOutput, _ = sandbox.ParseBytes(pol.MaxOutput) // checked above
			}
			sp.Toolchains = sp.Toolchains || pol.Toolchains
		}
	}
	if p.Network == "host" {
		return fmt.Errorf("--task: policy %s: network host: a race's forks never get the host's network", ref)
	}
	setS("network", tf.network, p.Network)
	setS("memory", &tf.limits.memory, p.Memory)
	if unset("pids") && p.Pids > 0 {
		tf.limits.pids = strconv.Itoa(p.Pids)
	}
	if unset("cpus") && p.CPUs > 0 {
		tf.limits.cpus = strconv.FormatFloat(p.CPUs, 'f', -1, 64)
	}
	if unset("timeout") && p.Timeout != "" {
		tf.o.Timeout, _ = time.ParseDuration(p.Timeout) // checked by the lab
	}
	return nil
}

// runArgs: one TASK argument, or none with --task.
func runArgs(task *string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if *task != "" {
			return exactArgs(0)(c, args)
		}
		return exactArgs(1)(c, args)
	}
}

// join is a then b, nil when both are empty (as a flag left out is).
func join(a, b []string) []string {
	if len(a)+len(b) == 0 {
		return nil
	}
	return append(append([]string{}, a...), b...)
}
