package event

// What an agent CLI's own stream says it did (Claude Code's stream-json,
// codex's --json), each marked SourceAgent: recorded, never what forkbomb
// decides on. Its model traffic is the proxy's (payload_engine.go).

// SourceAgent marks what an agent CLI said.
const SourceAgent = "agent"

// AgentToolCallData: the agent called a tool (Claude Code; codex's shell
// and apply_patch, with CodexCommandInput or CodexChangesInput).
type AgentToolCallData struct {
	Source string `json:"source"`
	ID     string `json:"id"`
	Tool   string `json:"tool"`
	// Input is the tool's input: JSON, or cut text when it was too long.
	Input any `json:"input"`
}

// ClaudeInitData: Claude Code's session began (its system/init line).
type ClaudeInitData struct {
	Source     string   `json:"source"`
	Init       bool     `json:"init"` // true
	Version    string   `json:"version"`
	Tools      []string `json:"tools"`
	MCPServers int      `json:"mcp_servers"`
}

// ClaudeTextData: text of Claude Code's model, with the usage it claims.
type ClaudeTextData struct {
	Source    string `json:"source"`
	Text      string `json:"text"`
	Model     string `json:"model"`
	TokensIn  int64  `json:"tokens_in"`
	TokensOut int64  `json:"tokens_out"`
}

// ClaudeResultData: Claude Code's last word on its session (its result
// line), the cost as it claims it.
type ClaudeResultData struct {
	Source         string  `json:"source"`
	Final          bool    `json:"final"` // true
	Subtype        string  `json:"subtype"`
	Turns          int     `json:"turns"`
	ClaimedCostUSD float64 `json:"claimed_cost_usd"`
	IsError        bool    `json:"is_error"`
	Text           string  `json:"text"`
}

// ClaudeDroppedData: how many of Claude Code's lines and events were left
// out (unreadable, over the bounds), once at the end.
type ClaudeDroppedData struct {
	Source  string `json:"source"`
	Dropped int    `json:"dropped"`
}

// ClaudeToolResultData: what a tool of Claude Code returned.
type ClaudeToolResultData struct {
	Source string `json:"source"`
	ID     string `json:"id"`
	Error  bool   `json:"error"`
	Output string `json:"output"`
}

// CodexErrorData: codex reported an error, or a failed turn.
type CodexErrorData struct {
	Source string `json:"source"`
	Error  string `json:"error"`
}

// CodexItemErrorData: an error item of codex's.
type CodexItemErrorData struct {
	Source string `json:"source"`
	ID     string `json:"id"`
	Error  string `json:"error"`
}

// CodexMessageData: a message of codex's agent.
type CodexMessageData struct {
	Source string `json:"source"`
	ID     string `json:"id"`
	Text   string `json:"text"`
}

// CodexCommandInput is the input of codex's shell call.
type CodexCommandInput struct {
	Command string `json:"command"`
}

// CodexChangesInput is the input of codex's apply_patch: the paths and
// kinds of its changes, as codex gave them (or a note when too long).
type CodexChangesInput struct {
	Changes any `json:"changes"`
}

// CodexCommandResultData: codex's shell command ended.
type CodexCommandResultData struct {
	Source   string `json:"source"`
	ID       string `json:"id"`
	Tool     string `json:"tool"` // shell
	Status   string `json:"status"`
	Output   string `json:"output"`
	ExitCode *int   `json:"exit_code,omitempty"` // absent when codex gave none
	Error    bool   `json:"error"`
}

// CodexPatchResultData: codex's apply_patch ended.
type CodexPatchResultData struct {
	Source string `json:"source"`
	ID     string `json:"id"`
	Tool   string `json:"tool"` // apply_patch
	Status string `json:"status"`
	Error  bool   `json:"error"`
}

// CodexToolCallData: codex called an MCP tool or searched the web.
type CodexToolCallData struct {
	Source string `json:"source"`
	ID     string `json:"id"`
	Tool   string `json:"tool"` // mcp_tool_call or web_search
	Server string `json:"server"`
	Name   string `json:"name"`
	Query  string `json:"query"`
}

// CodexToolResultData: codex's MCP call or web search ended.
type CodexToolResultData struct {
	Source string `json:"source"`
	ID     string `json:"id"`
	Tool   string `json:"tool"`
	Status string `json:"status"`
}

func (AgentToolCallData) Kind() Kind      { return ToolCall }
func (ClaudeInitData) Kind() Kind         { return ModelRequest }
func (ClaudeTextData) Kind() Kind         { return ModelResponse }
func (ClaudeResultData) Kind() Kind       { return ModelResponse }
func (ClaudeDroppedData) Kind() Kind      { return ModelResponse }
func (ClaudeToolResultData) Kind() Kind   { return ToolResult }
func (CodexErrorData) Kind() Kind         { return Error }
func (CodexItemErrorData) Kind() Kind     { return Error }
func (CodexMessageData) Kind() Kind       { return ModelResponse }
func (CodexCommandResultData) Kind() Kind { return ToolResult }
func (CodexPatchResultData) Kind() Kind   { return ToolResult }
func (CodexToolCallData) Kind() Kind      { return ToolCall }
func (CodexToolResultData) Kind() Kind    { return ToolResult }
