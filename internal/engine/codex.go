package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/modelproxy"
	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// CodexPackage is the npm package (and the version tests pin) a missing
// codex CLI is installed from.
const CodexPackage = "@openai/codex@0.169.0"

// Codex is the codex engine: the real `codex exec --json` CLI, run whole
// inside the fork's sandbox. It reaches the model only through its fork's
// route to forkbomb's model proxy, holding a placeholder key; its own
// sandbox is off (it cannot nest in ours: our seccomp refuses the
// namespaces it would make) and its approvals are never asked; its
// configuration is a fresh CODEX_HOME forkbomb writes inside the sandbox,
// so nothing of the user's ~/.codex or of the repository's .codex loads.
type Codex struct {
	Bin     string // the CLI on the host, absolute
	Model   string // passed with -m; "": the CLI's default
	Version string // what `codex --version` said
	Routes  Routes
}

// Routes opens each fork's way to the model: a socket the sandbox bridges
// to 127.0.0.1:Port inside the fork, where forkbomb's model proxy adds the
// real key (see internal/modelproxy).
type Routes interface {
	Open(fork int, emit func(event.Payload)) (Route, error)
}

// Route is one fork's way to the model.
type Route struct {
	Socket      string // host UNIX socket the sandbox bridges
	Port        int    // its port on the fork's own 127.0.0.1
	Placeholder string // the fake key the fork holds
	// Env is what the agent needs besides the key: the base URL, and the
	// proxy variables when the run allows hosts.
	Env []string
	// Usage is what the fork's requests cost, counted on the trusted side
	// (never what the agent prints).
	Usage func() Usage
	Close func() error
}

// codexEngine is the codex engine's Descriptor.
var codexEngine = Descriptor{
	Name: "codex",
	Summary: "the Codex CLI through the model proxy: OPENAI_API_KEY, OPENAI_BASE_URL; the " +
		"organisation and project billed only from OPENAI_ORG_ID, OPENAI_PROJECT_ID, never from the fork",
	Doc: "the real codex CLI (codex exec), whole inside the fork's sandbox with its own sandbox " +
		"off, reaching the model only through forkbomb's model proxy with a placeholder key; " +
		"nothing of your ~/.codex or the repository's .codex loads.",
	Flags:    []*Flag{FlagAgentBin, FlagModel, FlagPriceIn, FlagPriceOut},
	Upstream: openaiUpstream,
	Canary:   true,
	Bin:      "codex",
	Package:  CodexPackage,
	Tools:    ToolsCodex,
	New:      func(ctx context.Context, s Settings) (Agent, error) { return NewCodex(ctx, s) },
}

// openaiUpstream is the OpenAI API as forkbomb's environment names it, for
// the model proxy: the key never leaves the proxy.
func openaiUpstream(getenv func(string) string) (modelproxy.Upstream, error) {
	// The organisation and project the key bills are the user's choice,
	// read where the OpenAI SDKs read them; a fork's own
	// OpenAI-Organization/OpenAI-Project never reach the upstream.
	u := modelproxy.Upstream{Kind: modelproxy.OpenAI, BaseURL: getenv("OPENAI_BASE_URL"), APIKey: getenv("OPENAI_API_KEY"),
		Organization: getenv("OPENAI_ORG_ID"), Project: getenv("OPENAI_PROJECT_ID")}
	if u.BaseURL == "" {
		u.BaseURL = "https://api.openai.com"
	}
	if u.APIKey == "" {
		return u, errors.New("the codex engine needs OPENAI_API_KEY in forkbomb's environment: forkbomb's model proxy adds it to the agent's requests, the agent never holds it")
	}
	return u, nil
}

// NewCodex finds the CLI (Settings.AgentBin, else codex on PATH), records
// its version (ctx bounds that run) and checks the route to the model.
func NewCodex(ctx context.Context, s Settings) (*Codex, error) {
	bin, v, err := s.findAgent(ctx, "codex", CodexPackage)
	if errors.Is(err, ErrAgentNotInstalled) {
		return nil, fmt.Errorf("codex engine: %w (the other engines: claude-code, api, command)", err)
	}
	if err != nil {
		return nil, fmt.Errorf("codex engine: %w", err)
	}
	if s.Routes == nil && s.Proxy != nil {
		s.Routes = ProxyRoutes(s.Proxy, modelproxy.OpenAI)
	}
	if s.Routes == nil {
		return nil, &SettingsError{Engine: "codex", Setting: "Proxy", Msg: "the codex engine needs forkbomb's model proxy"}
	}
	return &Codex{Bin: bin, Model: s.Model, Version: v, Routes: s.Routes}, nil
}

// Info implements Agent.
func (c *Codex) Info() Info {
	return Info{Name: "codex", Argv: []string{c.Bin}, Model: c.Model, Version: c.Version}
}

// Run implements Agent.
func (c *Codex) Run(ctx context.Context, w Workspace, t Task) Outcome {
	t.defaults()
	route, err := c.Routes.Open(t.Fork, t.Emit)
	if err != nil {
		return Outcome{State: event.ForkCrashed, Err: fmt.Errorf("codex: open the model route: %w", err)}
	}
	defer route.Close()
	root, _, err := w.Files(ctx)
	if err != nil {
		return Outcome{State: event.ForkCrashed, Err: fmt.Errorf("codex: the fork's files: %w", err)}
	}
	cfg := codexConfig(c.Model, fmt.Sprintf("http://127.0.0.1:%d/v1", route.Port), root)
	p := sandbox.Policy{
		Command: append([]string{"/bin/sh", "-c", codexLaunch, c.Bin}, c.args(t.Prompt)...),
		Timeout: t.Timeout,
		SetEnv: append([]string{
			"FORKBOMB_CODEX_CONFIG=" + cfg,
			fmt.Sprintf("FORKBOMB_FORK=%d", t.Fork),
			"NO_COLOR=1",
		}, route.Env...),
		Network:      sandbox.NetworkProxy,
		Proxy:        &sandbox.Proxy{Socket: route.Socket, Port: route.Port},
		Placeholders: map[string]string{"OPENAI_API_KEY": route.Placeholder},
		MaxOutput:    maxAgentOutput,
		Toolchains:   true,
	}
	t.Confine(&p)
	log := &syncWriter{w: t.Log}
	events := newCodexEvents(t.Emit, log)
	res, err := w.Exec(ctx, p, sandbox.Stdio{Stdin: nil, Stdout: events, Stderr: log})
	events.Close()
	out := processOutcome(ctx, res, err, sandbox.LimitReason(res, p))
	out.Usage = route.Usage()
	return out
}

// args are codex's own: JSON events, no git check, its sandbox and its
// approvals off (ours confines it), no session files, no execpolicy rules
// from the repository, and the prompt after "--" so that it is never an
// option.
func (c *Codex) args(prompt string) []string {
	a := []string{"exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
		"--ephemeral", "--ignore-rules", "--color", "never"}
	if c.Model != "" {
		a = append(a, "-m", c.Model)
	}
	return append(a, "--", prompt)
}

// codexLaunch runs in the sandbox before codex: it makes the fresh
// CODEX_HOME in the sandbox's own empty home, writes forkbomb's config
// there (private to the agent's uid), and replaces itself with the CLI
// ($0) and its arguments, stdin from /dev/null.
const codexLaunch = `umask 077
CODEX_HOME="$HOME/.codex-forkbomb"; export CODEX_HOME
mkdir -p "$CODEX_HOME" || exit 125
printf '%s' "$FORKBOMB_CODEX_CONFIG" > "$CODEX_HOME/config.toml" || exit 125
unset FORKBOMB_CODEX_CONFIG
exec "$0" "$@" </dev/null`

// Bounds on what the codex CLI may make forkbomb read or wait for.
const (
	maxAgentOutput = 64 << 20
	versionTimeout = time.Minute
)

// syncWriter lets the event parser and the CLI's stderr share the log.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *syncWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// ProxyRoutes are routes through forkbomb's model proxy: each fork gets an
// endpoint of its own, whose usage is read on the trusted side from the
// upstream's answers.
func ProxyRoutes(p *modelproxy.Proxy, kind string) Routes { return proxyRoutes{p: p, kind: kind} }

type proxyRoutes struct {
	p    *modelproxy.Proxy
	kind string
}

func (r proxyRoutes) Open(fork int, emit func(event.Payload)) (Route, error) {
	ep, err := r.p.Fork(fork, emit)
	if err != nil {
		return Route{}, err
	}
	var env []string
	for _, kv := range ep.Env(r.kind) {
		// The key goes in as a placeholder (Policy.Placeholders), never as
		// an ordinary variable.
		if !strings.Contains(strings.SplitN(kv, "=", 2)[0], "API_KEY") {
			env = append(env, kv)
		}
	}
	return Route{
		Socket: ep.Socket, Port: ep.Port, Placeholder: ep.Placeholder, Env: env,
		Usage: func() Usage {
			u := ep.Usage()
			return Usage{Turns: u.Requests, TokensIn: u.TokensIn, TokensOut: u.TokensOut, CostMicroUSD: u.CostMicroUSD}
		},
		Close: ep.Close,
	}, nil
}

// codexConfig is the whole config.toml of a fork's codex: the only
// configuration it loads, since CODEX_HOME is a fresh folder and the
// user's ~/.codex is not in the sandbox's view.
//
// What each part is for:
//   - the model provider is the fork's route to forkbomb's model proxy,
//     on the Responses API, its key the placeholder in OPENAI_API_KEY; no
//     retries of its own (the proxy and the race bound the work);
//   - approvals never, codex's sandbox off: ours confines it, and its own
//     cannot nest in ours;
//   - no update check, analytics, feedback, history, telemetry export,
//     web search, memories or sub-agents: nothing leaves but model calls,
//     and nothing outlives the fork;
//   - the fork's tree is an untrusted project: codex 0.169 loads a
//     project's .codex/config.toml (MCP servers, hooks, notify) only for a
//     trusted one (TestCodexRepoConfigIsolation proves both ways), and
//     saying so here keeps a later default from changing that.
func codexConfig(model, baseURL, workdir string) string {
	var b strings.Builder
	kv := func(k string, v any) { fmt.Fprintf(&b, "%s = %s\n", k, tomlValue(v)) }
	if model != "" {
		kv("model", model)
	}
	kv("model_provider", "forkbomb")
	kv("approval_policy", "never")
	kv("sandbox_mode", "danger-full-access")
	kv("check_for_update_on_startup", false)
	kv("web_search", "disabled")
	b.WriteString("\n[analytics]\n")
	kv("enabled", false)
	b.WriteString("\n[feedback]\n")
	kv("enabled", false)
	b.WriteString("\n[history]\n")
	kv("persistence", "none")
	b.WriteString("\n[otel]\n")
	kv("exporter", "none")
	kv("log_user_prompt", false)
	b.WriteString("\n[features]\n")
	kv("memories", false)
	b.WriteString("\n[agents]\n")
	kv("enabled", false)
	b.WriteString("\n[model_providers.forkbomb]\n")
	kv("name", "forkbomb")
	kv("base_url", baseURL)
	kv("env_key", "OPENAI_API_KEY")
	kv("wire_api", "responses")
	kv("request_max_retries", 0)
	kv("stream_max_retries", 0)
	fmt.Fprintf(&b, "\n[projects.%s]\n", tomlValue(workdir))
	kv("trust_level", "untrusted")
	return b.String()
}

// tomlValue writes a string as a TOML basic string (JSON's escapes are
// TOML's), and a bool or an int as itself.
func tomlValue(v any) string {
	if s, ok := v.(string); ok {
		q, _ := json.Marshal(s)
		return string(q)
	}
	return fmt.Sprint(v)
}
