package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// The extension point of the full build. The core binary starts every
// sandbox, so it links nothing only gateway, world mcp/race/drive or the
// kubernetes backend need (their package initialisers alone cost each
// start ~10 ms);
// internal/cli/full implements these and cmd/forkbomb-full passes them to
// Main. Everything here is what such a verb needs of the core, and no more.

// Verb makes one command the core does not link: a top-level one (its name
// one of fullVerbs) or one of world's (fullWorldVerbs), so that the core
// lists it in --help and hands it on.
type Verb func(Kit) *cobra.Command

// Kit is what the core lends a Verb.
type Kit struct {
	IO IO
}

// ClaudeCode readies the claude-code engine as run does: its model reached
// through a model proxy holding the key from forkbomb's environment (closed
// by the returned func), and only once its canary has passed (recheck runs
// it first).
func (k Kit) ClaudeCode(ctx context.Context, es engine.Settings, recheck bool) (*engine.ClaudeCode, func(), error) {
	p, err := startModelProxy("claude-code", es, nil, os.Getenv)
	if err != nil {
		return nil, nil, err
	}
	es.Proxy = p
	cc, err := engine.NewClaudeCode(ctx, es)
	if err != nil {
		p.Close()
		return nil, nil, err
	}
	if err := checkCanary(ctx, k.IO, "claude-code", es, cc.Info(), recheck); err != nil {
		p.Close()
		return nil, nil, &exitError{code: ExitCouldNotRun, err: err}
	}
	return cc, func() { p.Close() }, nil
}

// RunsDir is dir, or the state home's runs directory when dir is "".
func (Kit) RunsDir(dir string) (string, error) { return runsDirOr(dir) }

// Cluster is the kubernetes backend: forks as pods (run --backend
// kubernetes) and what a cluster enforces (sandbox --probe --backend
// kubernetes).
type Cluster interface {
	// Store puts the race's forks in the cluster (o.Store, with the judge
	// on local as o.JudgeStore); close removes what is left there.
	Store(ctx context.Context, o *run.Options, local *workspace.Store, f ClusterFlags) (close func(), err error)
	Probe(ctx context.Context, f ClusterFlags, out io.Writer, asJSON bool) error
}

// ClusterFlags are the kubernetes flags of run and sandbox.
type ClusterFlags struct {
	Namespace, RuntimeClass, Image, Context string
	SandboxCRD                              string // auto, always or never
}

// Exit gives err the exit status code (one of the Exit constants); err may
// be nil for a status with no message.
func Exit(code int, err error) error { return &exitError{code: code, err: err} }

// Usagef is a mistake on the command line (exit status ExitUsage).
func Usagef(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, a...))
}

// ExactArgs is cobra.ExactArgs with a usage error.
func ExactArgs(n int) cobra.PositionalArgs { return exactArgs(n) }

// RangeArgs is cobra.RangeArgs with a usage error.
func RangeArgs(lo, hi int) cobra.PositionalArgs { return rangeArgs(lo, hi) }
