package engine

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/forkbomb/forkbomb/internal/modelproxy"
	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// claudeConfigDir is Claude Code's config folder inside the sandbox: in
// the sandbox's private /tmp, so it is new and empty for every run and
// nothing of the user's ~/.claude (hidden by the sandbox anyway) is read.
const claudeConfigDir = "/tmp/forkbomb-claude"

// claudeArgs are the CLI's flags. Each one that keeps something from
// loading is proved by TestClaudeCodeSettingsIsolation, with a control
// that drops them and sees the planted hook fire. tools, when not nil, replaces the CLI's tools (see ToolServer).
func (c *ClaudeCode) claudeArgs(tools []string) []string {
	args := []string{
		"-p", "--output-format", "stream-json", "--verbose",
		// forkbomb's sandbox is the confinement; the CLI's prompts would
		// only stall a headless run. It refuses this as uid 0, hence
		// sandbox.User.
		"--permission-mode", "bypassPermissions",
		// No settings file loads: not the repository's
		// .claude/settings.json or settings.local.json (hooks, MCP
		// approvals, plugins, permissions), nor a user's. This also keeps
		// the repository's skills and CLAUDE.md from loading as
		// instructions; the agent can still read them as files.
		"--setting-sources", "",
		"--disable-slash-commands",
		"--no-session-persistence",
	}
	if tools == nil {
		// MCP servers only from this (empty) list: a .mcp.json in the
		// repository never starts a process.
		tools = []string{"--strict-mcp-config", "--mcp-config", `{"mcpServers":{}}`,
			"--disallowedTools", "WebFetch,WebSearch"}
	}
	// or the workspace's server alone, and its tools instead of the
	// built-in ones (WebFetch and WebSearch among those denied)
	args = append(args, tools...)
	if c.unisolated {
		args = slices.DeleteFunc(args, func(a string) bool {
			return a == "--setting-sources" || a == "" || a == "--disable-slash-commands" || a == "--strict-mcp-config" || a == "--mcp-config" || a == `{"mcpServers":{}}`
		})
	}
	if c.Model != "" {
		args = append(args, "--model", c.Model)
	}
	if c.MaxTurns > 0 {
		args = append(args, "--max-turns", strconv.Itoa(c.MaxTurns))
	}
	return args
}

// claudeEnv is the CLI's environment besides the endpoint's: nothing it
// does not need to reach, no telemetry, no updates, no error reports.
var claudeEnv = []string{
	"CLAUDE_CONFIG_DIR=" + claudeConfigDir,
	"DISABLE_TELEMETRY=1",
	"DISABLE_ERROR_REPORTING=1",
	"DISABLE_AUTOUPDATER=1",
	"DISABLE_BUG_COMMAND=1",
	"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	"CLAUDE_CODE_DISABLE_TERMINAL_TITLE=1",
	"CLAUDE_CODE_ENABLE_TELEMETRY=0",
}

// Run implements Agent: a model proxy endpoint for this fork, then the CLI
// and everything it starts in one sandbox whose only way out is that
// endpoint. Usage is the endpoint's count, never what the CLI says.
func (c *ClaudeCode) Run(ctx context.Context, w Workspace, t Task) Outcome {
	t.defaults()
	ep, err := c.Proxy.Fork(t.Fork, t.Emit)
	if err != nil {
		return crashed(ctx, fmt.Errorf("claude-code: model proxy for fork %d: %w", t.Fork, err))
	}
	defer ep.Close()
	p, err := c.policy(ep, w, t)
	if err != nil {
		return crashed(ctx, err)
	}
	t.Confine(&p)
	st := newStream(t.Emit)
	res, err := w.Exec(ctx, p, sandbox.Stdio{
		Stdin:  strings.NewReader(t.Prompt),
		Stdout: io.MultiWriter(t.Log, st),
		Stderr: t.Log,
	})
	st.flush()
	out := processOutcome(ctx, res, err, sandbox.LimitReason(res, p))
	u := ep.Usage()
	out.Usage = Usage{Turns: u.Requests, TokensIn: u.TokensIn, TokensOut: u.TokensOut, CostMicroUSD: u.CostMicroUSD}
	return out
}

// policy is the CLI's sandbox: the endpoint as its one network, the
// placeholder as its key, a non-root uid, the CLI's folder readable.
func (c *ClaudeCode) policy(ep *modelproxy.Endpoint, w Workspace, t Task) (sandbox.Policy, error) {
	var tools []string
	if ts, ok := w.(ToolServer); ok {
		var err error
		if tools, err = mcpArgs(ts); err != nil {
			return sandbox.Policy{}, err
		}
	}
	p := sandbox.Policy{
		Command:    append([]string{c.Bin}, c.claudeArgs(tools)...),
		Timeout:    t.Timeout,
		SetEnv:     append([]string{fmt.Sprintf("FORKBOMB_FORK=%d", t.Fork)}, claudeEnv...),
		MaxOutput:  16 << 20,
		Toolchains: true,
		ReadOnly:   []string{filepath.Dir(c.Bin)},
		Network:    sandbox.NetworkProxy,
		Proxy:      &sandbox.Proxy{Socket: ep.Socket, Port: ep.Port},
		User:       &sandbox.User{UID: ClaudeUID, GID: ClaudeGID},
	}
	for _, kv := range ep.Env(modelproxy.Anthropic) {
		name, value, _ := strings.Cut(kv, "=")
		if name == "ANTHROPIC_API_KEY" {
			if value != ep.Placeholder {
				return p, fmt.Errorf("claude-code: the endpoint's key is not its placeholder")
			}
			p.Placeholders = map[string]string{name: value}
			continue
		}
		p.SetEnv = append(p.SetEnv, kv)
	}
	if p.Placeholders == nil {
		return p, fmt.Errorf("claude-code: the model proxy gave no placeholder key")
	}
	return p, nil
}
