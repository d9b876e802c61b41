package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// SystemPrompt is what the api engine tells the model before the task.
const SystemPrompt = "You are a coding agent working in a repository. Use the shell and editor tools to complete the task, then stop. The repository's tests decide whether your work is kept."

// Shell limits of the api engine: what one command of the model may take.
const (
	shellTimeout   = 5 * time.Minute
	shellMaxOutput = 64 << 10
)

// API is the api engine: forkbomb's own tool loop, run in the trusted
// process. The model's shell commands run one by one in the fork's
// sandbox, its edits in-process on the fork's files; the key never enters
// a fork.
type API struct {
	Provider string // "anthropic" or "openai" (any OpenAI-compatible endpoint)
	Model    string
	BaseURL  string // "": the provider's
	APIKey   string
	MaxTurns int
	// Prices in dollars per million tokens, for the cost of each fork
	// (0: not counted).
	PriceIn, PriceOut float64
}

// DefaultModel is the model of forkbomb's loop (the api and hosted
// engines) when none is given.
const DefaultModel = "claude-sonnet-5-5"

// apiEngine is the api engine's Descriptor.
var apiEngine = Descriptor{
	Name:    "api",
	Summary: "forkbomb's own loop over --provider: ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, or OPENAI_API_KEY, OPENAI_BASE_URL",
	Doc: "forkbomb's own tool loop over the Anthropic Messages API or an OpenAI-compatible " +
		"endpoint (--provider): the key stays in forkbomb; every shell command the model runs is " +
		"confined in the fork's sandbox.",
	Flags: []*Flag{FlagProvider, FlagModel, FlagMaxTurns, FlagPriceIn, FlagPriceOut},
	Model: DefaultModel,
	Env:   providerEnv,
	Loop:  true,
	Tools: ToolsShellEditor,
	New:   func(_ context.Context, s Settings) (Agent, error) { return NewAPI(s) },
}

// providerEnv reads the provider's key and endpoint where the SDKs read
// them: ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL, or OPENAI_….
func providerEnv(s *Settings, getenv func(string) string) {
	p := strings.ToUpper(s.Provider)
	if p == "" {
		p = "ANTHROPIC"
	}
	if s.APIKey == "" {
		s.APIKey = getenv(p + "_API_KEY")
	}
	if s.BaseURL == "" {
		s.BaseURL = getenv(p + "_BASE_URL")
	}
}

// Providers are the api engine's model protocols.
func Providers() []string { return []string{"anthropic", "openai"} }

// NewAPI checks s for the api engine.
func NewAPI(s Settings) (*API, error) {
	if s.Provider == "" {
		s.Provider = "anthropic"
	}
	if s.Provider != "anthropic" && s.Provider != "openai" {
		return nil, &SettingsError{Engine: "api", Setting: "Provider", Msg: fmt.Sprintf("provider %q: anthropic or openai", s.Provider)}
	}
	if s.APIKey == "" {
		return nil, &SettingsError{Engine: "api", Setting: "APIKey",
			Msg: fmt.Sprintf("the api engine needs %s_API_KEY in your environment", strings.ToUpper(s.Provider))}
	}
	if s.BaseURL != "" {
		if err := CheckEndpoint(s.BaseURL); err != nil {
			return nil, err
		}
	}
	return &API{Provider: s.Provider, Model: s.Model, BaseURL: s.BaseURL, APIKey: s.APIKey, MaxTurns: s.MaxTurns,
		PriceIn: s.PriceIn, PriceOut: s.PriceOut}, nil
}

// Info implements Agent.
func (a *API) Info() Info {
	return Info{Name: "api", Model: a.Model, Secrets: []string{a.APIKey}}
}

// Run implements Agent.
func (a *API) Run(ctx context.Context, w Workspace, t Task) Outcome {
	return a.run(ctx, w, t, func(*Config) {})
}

// run is Run with a hook on the loop's Config (the hosted engine's tag
// and bearer key).
func (a *API) run(ctx context.Context, w Workspace, t Task, hook func(*Config)) Outcome {
	t.defaults()
	root, files, err := w.Files(ctx)
	if err != nil {
		return crashed(ctx, err)
	}
	lctx := ctx
	if t.Timeout > 0 {
		var cancel context.CancelFunc
		lctx, cancel = context.WithTimeout(ctx, t.Timeout)
		defer cancel()
	}
	sh := &shell{w: w, t: t}
	defer sh.close()
	cfg := Config{
		BaseURL: a.BaseURL, APIKey: a.APIKey, Model: a.Model, MaxTurns: a.MaxTurns,
		System: SystemPrompt, Root: root, Files: sh.track(files),
		Shell: sh.run,
		Event: func(data event.Payload) {
			t.Emit(data)
			switch d := data.(type) {
			case event.ToolCallData:
				fmt.Fprintf(t.Log, "> %s %s\n", d.Tool, d.Input)
			case event.ToolResultData:
				fmt.Fprintf(t.Log, "%s\n", d.Output)
			}
		},
	}
	hook(&cfg)
	loop := RunAnthropic
	if a.Provider == "openai" {
		loop = RunOpenAI
	}
	res, err := loop(lctx, cfg, t.Prompt)
	var out Outcome
	if res != nil {
		// dollars per million tokens = micro-dollars per token
		out.Usage = Usage{Turns: res.Turns, TokensIn: res.TokensIn, TokensOut: res.TokensOut,
			CostMicroUSD: int64(float64(res.TokensIn)*a.PriceIn + float64(res.TokensOut)*a.PriceOut)}
		fmt.Fprintf(t.Log, "(%d turns, stop: %s, %d tokens in, %d out)\n", res.Turns, res.Stop, res.TokensIn, res.TokensOut)
	}
	switch {
	case ctx.Err() != nil:
		out.State = event.ForkKilled
	case errors.Is(lctx.Err(), context.DeadlineExceeded):
		// The loop is no process: its timeout is reported as the
		// sandbox reports a command's.
		out.State, out.Exit = event.ForkTimedOut, sandbox.ExitTimeout
	case err != nil:
		out.State, out.Err = event.ForkCrashed, err
	default:
		out.State = event.ForkExited
	}
	return out
}

// crashed is the outcome of an engine that could not start.
func crashed(ctx context.Context, err error) Outcome {
	if ctx.Err() != nil {
		return Outcome{State: event.ForkKilled}
	}
	return Outcome{State: event.ForkCrashed, Err: err}
}
