package engine

import (
	"encoding/json"
	"fmt"
)

// ToolServer is a workspace whose only tool is an MCP server of its own
// rather than the agent's built-in file and shell tools: a world
// (internal/world), whose shell is the one thing that acts. The
// claude-code engine gives the CLI that server, started by the CLI inside
// the same sandbox, and none of its built-in tools.
type ToolServer interface {
	// MCPServer is the server's name (Claude Code calls its tools
	// mcp__NAME__TOOL), the command that starts it inside the sandbox, and
	// the tools the agent may call.
	MCPServer() (name string, argv []string, tools []string)
}

// claudeBuiltinTools are denied by name besides `--tools ""` (which gives
// the CLI none): a later CLI that adds a tool to an empty set, or reads the
// flag differently, still finds these refused. TestWorldDriveRefusesBuiltins
// (internal/cli) proves a model that calls Bash or Write gets a refusal.
var claudeBuiltinTools = "Bash,BashOutput,KillShell,Read,Write,Edit,MultiEdit,NotebookEdit,Glob,Grep,LS,Task,TaskStop,Agent,WebFetch,WebSearch,TodoWrite,Skill,SlashCommand,CronCreate,CronDelete,CronList,EnterWorktree,ExitWorktree,ListAgents,Monitor,ReportFindings,ScheduleWakeup,SendMessage,ToolSearch,Workflow"

// validMCPName: 1–64 of [A-Za-z0-9_-]. A loop, not a regexp: the
// regexp's {1,64} compiled at start-up was most of this package's
// initialisation, paid by every forkbomb process.
func validMCPName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// mcpArgs are the flags that make the server the CLI's only tools.
func mcpArgs(ts ToolServer) ([]string, error) {
	name, argv, tools := ts.MCPServer()
	if !validMCPName(name) || len(argv) == 0 || len(tools) == 0 {
		return nil, fmt.Errorf("claude-code: workspace MCP server %q: a name, a command and tools are needed", name)
	}
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		name: map[string]any{"type": "stdio", "command": argv[0], "args": argv[1:]},
	}})
	if err != nil {
		return nil, fmt.Errorf("claude-code: MCP config: %w", err)
	}
	allowed := ""
	for i, t := range tools {
		if !validMCPName(t) {
			return nil, fmt.Errorf("claude-code: MCP tool name %q", t)
		}
		if i > 0 {
			allowed += ","
		}
		allowed += "mcp__" + name + "__" + t
	}
	return []string{
		"--strict-mcp-config", "--mcp-config", string(cfg),
		"--tools", "",
		"--allowedTools", allowed,
		"--disallowedTools", claudeBuiltinTools,
	}, nil
}
