// Package podrun is the pod's end of a remote fork's command: forkbomb's
// own binary, sent into the fork's pod, runs each command there inside
// forkbomb's sandbox (internal/sandbox) with the fork's policy, so a pod
// keeps the walls a laptop has — the same code, on whichever backend the
// pod's kernel and runtime allow — on top of the pod's own.
//
// The host side (internal/kube) starts it over the Kubernetes API's exec
// as Argv(bin, spec, command…); the spec is JSON in one argument, the
// command the arguments after it, so each keeps the kernel's per-argument
// limit. A spec with Probe set runs sandbox.Probe instead and prints its
// report as JSON: the host learns once per pod which backend confines
// there, and refuses the pod when none does.
//
// The exit status is the command's own (128+N when signal N ended it),
// ExitTimeout when its timeout killed it, and ExitSetup when the sandbox
// could not be built: then the command did not run — never unconfined.
// Limits are not the runner's: a pod's cgroup holds them.
package podrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// arg is argv[1] of forkbomb started as the pod's runner.
const arg = "__forkbomb_pod"

// Exit statuses the runner gives besides the command's own; they are
// those of `forkbomb sandbox` (README's exit statuses).
const (
	ExitTimeout = 124
	ExitSetup   = 125
)

// Spec is what the host decides about one command in a pod: the parts of
// sandbox.Policy that mean the same there (paths are the pod's).
type Spec struct {
	Probe        bool              `json:"probe,omitempty"`
	Workdir      string            `json:"workdir,omitempty"`
	Mode         sandbox.Mode      `json:"mode,omitempty"`
	Network      sandbox.Network   `json:"network,omitempty"`
	SetEnv       []string          `json:"set_env,omitempty"`
	Placeholders map[string]string `json:"placeholders,omitempty"`
	Timeout      time.Duration     `json:"timeout,omitempty"`
	// AllowPrograms and DenyPrograms are the policy's program rules, as
	// paths in the pod (sandbox.Policy): a rule the pod's files cannot
	// satisfy fails the command, never drops the rule.
	AllowPrograms []string `json:"allow_programs,omitempty"`
	DenyPrograms  []string `json:"deny_programs,omitempty"`
	// ProxyPort, with Network proxy, is the tunnel's forwarder's port on
	// the pod's 127.0.0.1: the command's one way out (sandbox.Proxy's
	// Listening; the landlock backend only).
	ProxyPort int `json:"proxy_port,omitempty"`
	// Hide are the pod's paths the command must not see (sandbox.Policy's
	// Hide): forkbomb's folder around the tree — its binary, anything it
	// keeps there — of which the tree alone, the workdir, stays in view.
	Hide []string `json:"hide,omitempty"`
}

// Argv is the command that runs command in the pod under spec, with bin
// forkbomb's binary there.
func Argv(bin string, spec Spec, command ...string) ([]string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	return append([]string{bin, arg, string(b), "--"}, command...), nil
}

// IsRunner reports whether this process was started as the pod's runner.
func IsRunner() bool { return len(os.Args) > 2 && os.Args[1] == arg }

// Main runs the runner with os.Args and exits.
func Main() {
	os.Exit(run(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var spec Spec
	if len(args) == 0 || json.Unmarshal([]byte(args[0]), &spec) != nil {
		fmt.Fprintln(stderr, "forkbomb pod runner: bad spec")
		return ExitSetup
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP, os.Interrupt)
	defer stop()
	if spec.Probe {
		rep, err := sandbox.Probe(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "forkbomb pod runner: probe:", err)
			return ExitSetup
		}
		if err := json.NewEncoder(stdout).Encode(rep); err != nil {
			return ExitSetup
		}
		return 0
	}
	command := args[1:]
	if len(command) > 0 && command[0] == "--" {
		command = command[1:]
	}
	if len(command) == 0 {
		fmt.Fprintln(stderr, "forkbomb pod runner: no command")
		return ExitSetup
	}
	p := sandbox.Policy{
		Command:      command,
		Workdir:      spec.Workdir,
		Mode:         spec.Mode,
		Network:      spec.Network,
		SetEnv:       spec.SetEnv,
		Placeholders: spec.Placeholders,
		Timeout:      spec.Timeout,

		AllowPrograms: spec.AllowPrograms,
		DenyPrograms:  spec.DenyPrograms,
		Hide:          spec.Hide,
	}
	if spec.ProxyPort != 0 {
		p.Proxy = &sandbox.Proxy{Port: spec.ProxyPort, Listening: true}
	}
	res, err := sandbox.Run(ctx, p, sandbox.Stdio{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	switch {
	case err != nil && errors.Is(err, sandbox.ErrCommandNotFound):
		fmt.Fprintln(stderr, "forkbomb:", err)
		return 127
	case err != nil && errors.Is(err, sandbox.ErrCommandNotExecutable):
		fmt.Fprintln(stderr, "forkbomb:", err)
		return 126
	case err != nil:
		fmt.Fprintln(stderr, "forkbomb:", err)
		return ExitSetup
	case res.TimedOut:
		return ExitTimeout
	}
	return res.ExitCode
}
