package engine

import "fmt"

// Flag is an engine setting taken from the command line. A verb that
// drives an agent registers the flags of the engines it offers, so each
// setting has one flag, one meaning and one help text in every verb.
type Flag struct {
	Name  string
	Usage string
	// Values, when set, are the only values it takes (checked when the
	// command line is parsed); the first is its default.
	Values []string
	// Field is the setting it fills: a *string, *int or *float64 in s.
	Field func(s *Settings) any
}

// The engines' flags; each Descriptor lists those it reads.
var (
	FlagAgent = &Flag{Name: "agent",
		Usage: "the agent: a shell command run in each fork (cwd: the fork; the task on stdin and in $FORKBOMB_TASK, the fork's number in $FORKBOMB_FORK)",
		Field: func(s *Settings) any { return &s.Agent }}
	FlagAgentBin = &Flag{Name: "agent-bin",
		Usage: "the agent CLI (default: its name on PATH)",
		Field: func(s *Settings) any { return &s.AgentBin }}
	FlagProvider = &Flag{Name: "provider",
		Usage:  "the model API forkbomb's loop speaks: anthropic, or openai (any OpenAI-compatible endpoint)",
		Values: Providers(),
		Field:  func(s *Settings) any { return &s.Provider }}
	FlagModel = &Flag{Name: "model",
		Usage: fmt.Sprintf("the model (default: %s for forkbomb's loop, the agent CLI's own for an agent CLI)", DefaultModel),
		Field: func(s *Settings) any { return &s.Model }}
	FlagMaxTurns = &Flag{Name: "max-turns",
		Usage: "model turns per agent (default: 30 for forkbomb's loop, the agent CLI's own for an agent CLI)",
		Field: func(s *Settings) any { return &s.MaxTurns }}
	FlagPriceIn = &Flag{Name: "price-in",
		Usage: "dollars per million input tokens, for the recorded cost",
		Field: func(s *Settings) any { return &s.PriceIn }}
	FlagPriceOut = &Flag{Name: "price-out",
		Usage: "dollars per million output tokens, for the recorded cost",
		Field: func(s *Settings) any { return &s.PriceOut }}
)
