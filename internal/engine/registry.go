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
	Argv []string // command: the agent program
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
}

// engines maps each engine's name to its constructor. It is the one place
// a name becomes an engine: the race takes the Agent, never the name.
// Never written after start-up.
var engines = []struct {
	name string
	make func(Settings) (Agent, error)
}{
	{"command", func(s Settings) (Agent, error) { return NewCommand(s) }},
	{"api", func(s Settings) (Agent, error) { return NewAPI(s) }},
	{"claude-code", func(s Settings) (Agent, error) { return NewClaudeCode(context.Background(), s) }},
	{"codex", func(s Settings) (Agent, error) { return NewCodex(s) }},
	{"hosted", func(s Settings) (Agent, error) { return NewHosted(s) }},
}

// Names lists the engines New knows, in the order --help shows them.
func Names() []string {
	out := make([]string, len(engines))
	for i, e := range engines {
		out[i] = e.name
	}
	return out
}

// New builds the engine called name from s. An unknown name is an
// ErrUnknownEngine naming the valid ones; settings the engine cannot use
// are a *SettingsError.
func New(name string, s Settings) (Agent, error) {
	for _, e := range engines {
		if e.name == name {
			a, err := e.make(s)
			if errors.Is(err, ErrAgentNotInstalled) {
				// Names cannot be called from a constructor (the
				// table refers to them), so the choice is named here.
				return nil, fmt.Errorf("%w (engines: %s)", err, strings.Join(Names(), ", "))
			}
			return a, err
		}
	}
	return nil, fmt.Errorf("%w %q (valid: %s)", ErrUnknownEngine, name, strings.Join(Names(), ", "))
}
