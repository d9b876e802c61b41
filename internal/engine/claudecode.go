package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/forkbomb/forkbomb/internal/modelproxy"
	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// ClaudeCodePackage is the npm package (and the version forkbomb is tested
// with) of the claude-code engine's CLI.
const ClaudeCodePackage = "@anthropic-ai/claude-code@2.1.328"

// ErrAgentNotInstalled: the agent CLI an engine drives is not on PATH nor
// given with --agent-bin.
var ErrAgentNotInstalled = errors.New("agent CLI not installed")

// ClaudeUID and ClaudeGID are who Claude Code is inside its sandbox: it
// refuses to bypass its permission prompts as uid 0, and forkbomb's
// confinement, not those prompts, is what holds it (see sandbox.User).
const ClaudeUID, ClaudeGID = 1000, 1000

// ClaudeCode is the claude-code engine: the real `claude` CLI, headless,
// run whole inside the fork's sandbox. It reaches the model only through
// the run's model proxy, holding a placeholder key; the proxy adds the real
// one outside and measures what the fork used.
type ClaudeCode struct {
	Bin     string // the CLI, absolute and with links resolved
	Version string // what `claude --version` said, bounded
	Model   string // --model; "": the CLI's default
	Proxy   *modelproxy.Proxy
	// MaxTurns, when positive, is the CLI's --max-turns (--max-turns;
	// else the CLI's own limit and the task's timeout).
	MaxTurns int

	// unisolated drops the flags that keep the repository's and the
	// user's settings, hooks, MCP servers and skills from loading: only
	// for the test's positive control.
	unisolated bool
}

// claudeCodeEngine is the claude-code engine's Descriptor.
var claudeCodeEngine = Descriptor{
	Name: "claude-code",
	Summary: "the real claude CLI through forkbomb's model proxy: ANTHROPIC_API_KEY or " +
		"CLAUDE_CODE_OAUTH_TOKEN, ANTHROPIC_BASE_URL",
	Doc: "the real claude CLI, headless, whole inside the fork's sandbox as a non-root user, " +
		"reaching the model only through forkbomb's model proxy with a placeholder key; nothing " +
		"of the repository's or your Claude settings, hooks, MCP servers or skills loads.",
	Flags:    []*Flag{FlagAgentBin, FlagModel, FlagMaxTurns, FlagPriceIn, FlagPriceOut},
	Upstream: anthropicUpstream,
	Canary:   true,
	Bin:      "claude",
	Package:  ClaudeCodePackage,
	MCP:      true,
	Tools:    ToolsClaude,
	Default:  true,
	New:      func(ctx context.Context, s Settings) (Agent, error) { return NewClaudeCode(ctx, s) },
}

// anthropicUpstream is the Anthropic API as forkbomb's environment names
// it, for the model proxy: the key never leaves the proxy.
func anthropicUpstream(getenv func(string) string) (modelproxy.Upstream, error) {
	u := modelproxy.Upstream{Kind: modelproxy.Anthropic, BaseURL: getenv("ANTHROPIC_BASE_URL"),
		APIKey: getenv("ANTHROPIC_API_KEY"), OAuthToken: getenv("CLAUDE_CODE_OAUTH_TOKEN")}
	if u.BaseURL == "" {
		u.BaseURL = "https://api.anthropic.com"
	}
	if u.APIKey == "" && u.OAuthToken == "" {
		return u, errors.New("the claude-code engine needs ANTHROPIC_API_KEY (or a Claude subscription's CLAUDE_CODE_OAUTH_TOKEN) in forkbomb's environment: forkbomb's model proxy adds it to the agent's requests, the agent never holds it")
	}
	return u, nil
}

// NewClaudeCode finds the CLI, records its version (ctx bounds that run)
// and checks s.
func NewClaudeCode(ctx context.Context, s Settings) (*ClaudeCode, error) {
	if s.Proxy == nil {
		return nil, &SettingsError{Engine: "claude-code", Setting: "Proxy",
			Msg: "the claude-code engine needs the run's model proxy (Settings.Proxy): forkbomb never hands the agent a real key"}
	}
	bin, version, err := s.findAgent(ctx, "claude", ClaudeCodePackage)
	if err != nil {
		return nil, fmt.Errorf("claude-code engine: %w", err)
	}
	return &ClaudeCode{Bin: bin, Version: version, Model: s.Model, Proxy: s.Proxy, MaxTurns: s.MaxTurns}, nil
}

// Info implements Agent.
func (c *ClaudeCode) Info() Info {
	return Info{Name: "claude-code", Argv: []string{c.Bin}, Model: c.Model, Version: c.Version}
}

// findAgent finds the agent CLI called name where the forks run it
// (Settings.Find), else on this machine, and its version.
func (s Settings) findAgent(ctx context.Context, name, pkg string) (bin, version string, err error) {
	if s.Find != nil {
		return s.Find(ctx, name, s.AgentBin)
	}
	if bin, err = findAgent(name, s.AgentBin, pkg); err != nil {
		return "", "", err
	}
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	if version, err = agentVersion(ctx, bin); err != nil {
		return "", "", err
	}
	return bin, version, nil
}

// findAgent resolves an agent CLI: the one given, else name on PATH. The
// path is made absolute with its links resolved, so the sandbox runs the
// file that was checked (and can be given its folder to read).
func findAgent(name, given, pkg string) (string, error) {
	bin := given
	if bin == "" {
		p, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("%w: %s is not on PATH; install it (npm install -g %s), give it with --agent-bin, or pick another engine",
				ErrAgentNotInstalled, name, pkg)
		}
		bin = p
	}
	abs, err := filepath.Abs(bin)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w (npm install -g %s)", ErrAgentNotInstalled, bin, err, pkg)
	}
	fi, err := os.Stat(abs)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%w: %s is not an executable file (npm install -g %s)", ErrAgentNotInstalled, abs, pkg)
	}
	return abs, nil
}

// agentVersion runs `bin --version` confined (an agent CLI is a program of
// the user's, but nothing of it runs on the trusted side), bounded in time
// and output; the first line is the version.
func agentVersion(ctx context.Context, bin string) (string, error) {
	dir, err := os.MkdirTemp("", "forkbomb-version-")
	if err != nil {
		return "", fmt.Errorf("version of %s: %w", bin, err)
	}
	defer sandbox.RemoveAll(dir)
	var out strings.Builder
	res, err := sandbox.Run(ctx, sandbox.Policy{
		Command: []string{bin, "--version"}, Workdir: dir, ReadOnly: []string{filepath.Dir(bin)},
		Timeout: 30 * time.Second, MaxOutput: 4 << 10, Toolchains: true,
	}, sandbox.Stdio{Stdout: &out, Stderr: io.Discard})
	if ctx.Err() != nil {
		// stopped (an interrupted command), not a broken CLI
		return "", fmt.Errorf("version of %s: %w", bin, ctx.Err())
	}
	if err != nil {
		return "", fmt.Errorf("version of %s: %w", bin, err)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	if res.ExitCode != 0 || line == "" {
		return "", fmt.Errorf("version of %s: exit %d, %q", bin, res.ExitCode, truncate(line, 200))
	}
	return truncate(line, 200), nil
}
