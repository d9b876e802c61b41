package engine

import (
	"encoding/json"
	"fmt"
	"regexp"
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

var mcpName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// mcpArgs are the flags that make the server the CLI's only tools.
func mcpArgs(ts ToolServer) ([]string, error) {
	name, argv, tools := ts.MCPServer()
	if !mcpName.MatchString(name) || len(argv) == 0 || len(tools) == 0 {
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
		if !mcpName.MatchString(t) {
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
