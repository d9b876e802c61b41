package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

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
	Event     func(kind event.Kind, data map[string]any)
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

// noRedirects is the HTTP client of every model call: a redirect could
// carry the key to another host.
var noRedirects = &http.Client{
	Timeout: 10 * time.Minute,
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return errors.New("model endpoint redirected; redirects are not followed")
	},
}

// RunAnthropic runs the tool loop against the Anthropic Messages API
// (streaming, with the SDK's retries and backoff on 429 and 5xx).
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
		cfg.Event = func(event.Kind, map[string]any) {}
	}
	client := anthropic.NewClient(
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(cfg.APIKey),
		option.WithHTTPClient(noRedirects),
		option.WithMaxRetries(4),
	)
	tools := []anthropic.ToolUnionParam{
		{OfTool: &anthropic.ToolParam{Name: "shell", Description: anthropic.String(shellDescription),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: shellSchema, Required: []string{"command"}}}},
		{OfTool: &anthropic.ToolParam{Name: "editor", Description: anthropic.String(editorDescription),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: editorSchema, Required: []string{"command", "path"}}}},
	}
	messages := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(task))}
	res := &Result{}
	for res.Turns < cfg.MaxTurns {
		res.Turns++
		params := anthropic.MessageNewParams{Model: cfg.Model, MaxTokens: cfg.MaxTokens, Messages: messages, Tools: tools}
		if cfg.System != "" {
			params.System = []anthropic.TextBlockParam{{Text: cfg.System}}
		}
		cfg.Event(event.ModelRequest, map[string]any{"turn": res.Turns, "messages": len(messages)})
		stream := client.Messages.NewStreaming(ctx, params)
		var msg anthropic.Message
		for stream.Next() {
			if err := msg.Accumulate(stream.Current()); err != nil {
				return res, fmt.Errorf("model stream: %w", err)
			}
		}
		if err := stream.Err(); err != nil {
			return res, fmt.Errorf("model: %w", err)
		}
		res.TokensIn += msg.Usage.InputTokens
		res.TokensOut += msg.Usage.OutputTokens
		cfg.Event(event.ModelResponse, map[string]any{"turn": res.Turns, "stop_reason": string(msg.StopReason),
			"input_tokens": msg.Usage.InputTokens, "output_tokens": msg.Usage.OutputTokens, "text": textOf(msg)})
		messages = append(messages, msg.ToParam())
		var results []anthropic.ContentBlockParamUnion
		for _, block := range msg.Content {
			if block.Type != "tool_use" {
				continue
			}
			tu := block.AsToolUse()
			out, isErr := callTool(ctx, cfg, tu.Name, tu.Input)
			cfg.Event(event.ToolCall, map[string]any{"turn": res.Turns, "tool": tu.Name, "input": json.RawMessage(tu.Input)})
			cfg.Event(event.ToolResult, map[string]any{"turn": res.Turns, "tool": tu.Name, "error": isErr, "output": truncate(out, 64<<10)})
			results = append(results, anthropic.NewToolResultBlock(tu.ID, out, isErr))
		}
		if len(results) == 0 {
			res.Stop = string(msg.StopReason)
			return res, nil
		}
		messages = append(messages, anthropic.NewUserMessage(results...))
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
		return edit(cfg.Files, cfg.Root, input)
	}
	return fmt.Sprintf("unknown tool %q: the tools are shell and editor", name), true
}

func textOf(m anthropic.Message) string {
	s := ""
	for _, b := range m.Content {
		if b.Type == "text" {
			s += b.AsText().Text
		}
	}
	return truncate(s, 64<<10)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("… (%d bytes more)", len(s)-n)
}
