package engine

import (
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
	// claude-code, codex: the agent CLI
	AgentBin string            // the CLI to run; "": found on PATH
	Proxy    *modelproxy.Proxy // the run's model proxy, holding the real key
	Routes   Routes            // each fork's way to the model; "": through Proxy
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
	{"codex", func(s Settings) (Agent, error) { return NewCodex(s) }},
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
			return e.make(s)
		}
	}
	return nil, fmt.Errorf("%w %q (valid: %s)", ErrUnknownEngine, name, strings.Join(Names(), ", "))
}
