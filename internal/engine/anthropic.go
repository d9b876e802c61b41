package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// Config is one agent's loop.
type Config struct {
	BaseURL   string // default https://api.anthropic.com
	APIKey    string // never enters a fork, the record or the logs
	Model     string
	MaxTurns  int
	MaxTokens int64
	System    string
	Root      string                                           // the path the model sees as the workspace root
	Files     workspace.Files                                  // the workspace's files, for the editor
	Shell     func(ctx context.Context, command string) string // runs one command in the fork's sandbox
	Event     func(event.Payload)
	// Headers are sent on every model call besides the key's (the
	// hosted engine's call tag). They are labels, never secrets: a
	// key put here would escape the rule that it travels in one header.
	Headers map[string]string
	// Bearer sends the key as "Authorization: Bearer" on the Anthropic
	// protocol too, not x-api-key: a forkbomb gateway takes it there,
	// the one header a proxy or log is expected to treat as a secret.
	Bearer bool
}

// withHeaders adds cfg's extra headers to h, never over one h has (the
// key's, the protocol's).
func (cfg Config) withHeaders(h map[string]string) map[string]string {
	for k, v := range cfg.Headers {
		if _, set := h[k]; !set {
			h[k] = v
		}
	}
	return h
}

// Result is how a loop ended.
type Result struct {
	Turns     int
	TokensIn  int64
	TokensOut int64
	Stop      string // "end_turn", "max_turns", …
}

// CheckEndpoint refuses endpoints a key must not be sent to: plain http
// anywhere but loopback, and URLs carrying credentials.
func CheckEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("model endpoint %q: %w", raw, err)
	}
	if u.User != nil {
		return fmt.Errorf("model endpoint %s: URLs with credentials are refused", u.Redacted())
	}
	switch u.Scheme {
	case "https":
	case "http":
		host := u.Hostname()
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("model endpoint %s: plain http only to loopback", u.Redacted())
		}
	default:
		return fmt.Errorf("model endpoint %s: scheme must be https (or http on loopback)", u.Redacted())
	}
	return nil
}

// RunAnthropic runs the tool loop against the Anthropic Messages API
// (streaming, retried with backoff on 429 and 5xx; modelhttp.go).
func RunAnthropic(ctx context.Context, cfg Config, task string) (*Result, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://api.anthropic.com"
	}
	if err := CheckEndpoint(cfg.BaseURL); err != nil {
		return nil, err
	}
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = 30
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = 8192
	}
	if cfg.Event == nil {
		cfg.Event = func(event.Payload) {}
	}
	tools := []anthropicTool{
		{Name: "shell", Description: shellDescription,
			InputSchema: map[string]any{"type": "object", "properties": shellSchema, "required": []string{"command"}}},
		{Name: "editor", Description: editorDescription,
			InputSchema: map[string]any{"type": "object", "properties": editorSchema, "required": []string{"command", "path"}}},
	}
	messages := []anthropicMessage{{Role: "user", Content: []anthropicBlock{{Type: "text", Text: &task}}}}
	res := &Result{}
	for res.Turns < cfg.MaxTurns {
		res.Turns++
		params := anthropicRequest{Model: cfg.Model, MaxTokens: cfg.MaxTokens, Messages: messages, Tools: tools, Stream: true}
		if cfg.System != "" {
			params.System = []anthropicBlock{{Type: "text", Text: &cfg.System}}
		}
		cfg.Event(event.ModelRequestData{Turn: res.Turns, Messages: len(messages)})
		msg, err := streamAnthropic(ctx, cfg, params)
		if err != nil {
			return res, err
		}
		res.TokensIn += msg.inputTokens
		res.TokensOut += msg.outputTokens
		cfg.Event(event.ModelResponseData{Turn: res.Turns, StopReason: msg.stopReason,
			InputTokens: msg.inputTokens, OutputTokens: msg.outputTokens, Text: truncate(msg.text(), 64<<10)})
		messages = append(messages, anthropicMessage{Role: "assistant", Content: msg.param()})
		var results []anthropicBlock
		for _, block := range msg.content {
			if block.Type != "tool_use" {
				continue
			}
			out, isErr := callTool(ctx, cfg, block.Name, block.Input)
			cfg.Event(event.ToolCallData{Turn: res.Turns, Tool: block.Name, Input: event.JSON(block.Input)})
			cfg.Event(event.ToolResultData{Turn: res.Turns, Tool: block.Name, Error: isErr, Output: truncate(out, 64<<10)})
			results = append(results, anthropicBlock{Type: "tool_result", ToolUseID: block.ID,
				Content: []anthropicBlock{{Type: "text", Text: &out}}, IsError: isErr})
		}
		if len(results) == 0 {
			res.Stop = msg.stopReason
			return res, nil
		}
		messages = append(messages, anthropicMessage{Role: "user", Content: results})
	}
	res.Stop = "max_turns"
	return res, nil
}

func callTool(ctx context.Context, cfg Config, name string, input json.RawMessage) (string, bool) {
	switch name {
	case "shell":
		var in struct{ Command string }
		if err := json.Unmarshal(input, &in); err != nil || in.Command == "" {
			return `the shell tool takes {"command": "..."}`, true
		}
		return cfg.Shell(ctx, in.Command), false
	case "editor":
		return edit(ctx, cfg.Files, cfg.Root, input)
	}
	return fmt.Sprintf("unknown tool %q: the tools are shell and editor", name), true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("… (%d bytes more)", len(s)-n)
}
