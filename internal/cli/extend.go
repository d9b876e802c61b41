package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/forkbomb/forkbomb/internal/engine"
)

// The extension point of the full build. The core binary starts every
// sandbox, so it links nothing only gateway, world mcp/race/drive or a
// heavy backend's implementation need (their package initialisers alone
// cost each start ~10 ms); internal/cli/full implements these and
// cmd/forkbomb-full passes them to Main (Options.Verbs, Options.WorldVerbs,
// Options.Backends). Everything here is what such a verb needs of the
// core, and no more.

// Verb makes one command the core does not link: a top-level one (its name
// one of fullVerbs) or one of world's (fullWorldVerbs), so that the core
// lists it in --help and hands it on.
type Verb func(Kit) *cobra.Command

// Kit is what the core lends a Verb.
type Kit struct {
	IO IO
}

// Ready readies engine name as run does (ready): the one way a verb gets
// an agent. close releases what it holds; call it when the agent is done.
func (k Kit) Ready(ctx context.Context, name string, s Setup) (engine.Agent, func(), error) {
	return ready(ctx, k.IO, name, s)
}

// RunsDir is dir, or the state home's runs directory when dir is "".
func (Kit) RunsDir(dir string) (string, error) { return runsDirOr(dir) }

// ReadPrompts reads --prompts: prompt variants separated by lines of ---
// ("" reads none).
func ReadPrompts(file string) ([]string, error) {
	if file == "" {
		return nil, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--prompts: %w", err)
	}
	var out []string
	for _, p := range strings.Split(string(data), "\n---\n") {
		if strings.TrimSpace(p) != "" {
			out = append(out, strings.TrimSpace(p))
		}
	}
	return out, nil
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
