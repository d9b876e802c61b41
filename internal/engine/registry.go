package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/forkbomb/forkbomb/internal/modelproxy"
)

// Settings are what an engine may be built from: the union of every
// engine's settings, each engine reading its own.
type Settings struct {
	// command: the agent program, or Agent, a shell command run by
	// /bin/sh -c (the --agent flag)
	Argv  []string
	Agent string
	// api: forkbomb's own loop
	Provider          string // anthropic (default) or openai
	Model             string
	BaseURL           string
	APIKey            string
	MaxTurns          int
	PriceIn, PriceOut float64 // dollars per million tokens
	// claude-code (and the other agent CLIs)
	AgentBin string            // the CLI; "": found on PATH
	Proxy    *modelproxy.Proxy // the run's model proxy; the CLI's only way to a model
	Routes   Routes            // codex: each fork's way to the model; nil: through Proxy
	// Find finds the agent CLI called name where the forks run it — given
	// is --agent-bin, a path there — and says its version; nil: on this
	// machine (PATH, its version run confined here). A backend whose forks
	// run an image's programs sets it (backend.AgentFinder).
	Find func(ctx context.Context, name, given string) (bin, version string, err error)
}

// registry is every engine, in the order --help lists them: the one place
// an engine is registered (its Descriptor lives in its own file). Never
// written.
var registry = []*Descriptor{&commandEngine, &apiEngine, &claudeCodeEngine, &codexEngine, &hostedEngine}

// Descriptors are the registered engines, in --help's order.
func Descriptors() []*Descriptor { return registry }

// Names lists the engines New knows, in the order --help shows them.
func Names() []string {
	out := make([]string, len(registry))
	for i, d := range registry {
		out[i] = d.Name
	}
	return out
}

// Lookup is the engine called name. An unknown name is an
// ErrUnknownEngine naming the valid ones.
func Lookup(name string) (*Descriptor, error) {
	for _, d := range registry {
		if d.Name == name {
			return d, nil
		}
	}
	return nil, fmt.Errorf("%w %q (valid: %s)", ErrUnknownEngine, name, strings.Join(Names(), ", "))
}

// Default is the engine a run uses when none is named and its agent CLI
// is installed.
func Default() *Descriptor {
	for _, d := range registry {
		if d.Default {
			return d
		}
	}
	panic("engine: no engine is the default")
}

// New builds the engine called name from s: the one place a name becomes
// an engine (the race takes the Agent, never the name). ctx bounds what
// the engine runs to check itself. An unknown name is an ErrUnknownEngine
// naming the valid ones; settings the engine cannot use are a
// *SettingsError.
func New(ctx context.Context, name string, s Settings) (Agent, error) {
	d, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	a, err := d.New(ctx, s)
	switch {
	case errors.Is(err, ErrAgentNotInstalled):
		// Names cannot be called from a constructor (the registry
		// refers to them), so the choice is named here.
		return nil, fmt.Errorf("%w (engines: %s)", err, strings.Join(Names(), ", "))
	case err != nil:
		return nil, err // not a typed nil in an Agent
	}
	return a, nil
}
