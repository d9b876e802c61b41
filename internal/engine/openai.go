package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/forkbomb/forkbomb/internal/event"
)

// RunOpenAI runs the same tool loop against any OpenAI-compatible chat
// completions endpoint (OpenAI, or local models behind vLLM, Ollama,
// llama.cpp), streaming, retried with backoff (modelhttp.go).
func RunOpenAI(ctx context.Context, cfg Config, task string) (*Result, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://api.openai.com/v1"
	}
	if err := CheckEndpoint(cfg.BaseURL); err != nil {
		return nil, err
	}
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = 30
	}
	if cfg.Event == nil {
		cfg.Event = func(event.Payload) {}
	}
	fn := func(name, desc string, props map[string]any, req []string) openaiTool {
		return openaiTool{Type: "function", Function: openaiFunction{Name: name, Description: desc,
			Parameters: map[string]any{"type": "object", "properties": props, "required": req}}}
	}
	tools := []openaiTool{
		fn("shell", shellDescription, shellSchema, []string{"command"}),
		fn("editor", editorDescription, editorSchema, []string{"command", "path"}),
	}
	var messages []openaiMessage
	if cfg.System != "" {
		messages = append(messages, openaiMessage{Role: "system", Content: &cfg.System})
	}
	messages = append(messages, openaiMessage{Role: "user", Content: &task})
	res := &Result{}
	for res.Turns < cfg.MaxTurns {
		res.Turns++
		params := openaiRequest{Model: cfg.Model, Messages: messages, Tools: tools, Stream: true,
			StreamOptions: openaiStreamOptions{IncludeUsage: true}}
		if cfg.MaxTokens > 0 {
			params.MaxCompletionTokens = cfg.MaxTokens
		}
		cfg.Event(event.ModelRequestData{Turn: res.Turns, Messages: len(messages)})
		reply, err := streamOpenAI(ctx, cfg, params)
		if err != nil {
			return res, err
		}
		res.TokensIn += reply.promptTokens
		res.TokensOut += reply.completionTokens
		cfg.Event(event.ModelResponseData{Turn: res.Turns, StopReason: reply.finishReason,
			InputTokens: reply.promptTokens, OutputTokens: reply.completionTokens, Text: truncate(reply.content, 64<<10)})
		messages = append(messages, reply.param())
		if len(reply.toolCalls) == 0 {
			res.Stop = reply.finishReason
			return res, nil
		}
		for _, tc := range reply.toolCalls {
			out, isErr := callTool(ctx, cfg, tc.Function.Name, json.RawMessage(tc.Function.Arguments))
			cfg.Event(event.ToolCallData{Turn: res.Turns, Tool: tc.Function.Name, Input: event.JSON(tc.Function.Arguments)})
			cfg.Event(event.ToolResultData{Turn: res.Turns, Tool: tc.Function.Name, Error: isErr, Output: truncate(out, 64<<10)})
			if isErr {
				out = "error: " + out
			}
			messages = append(messages, openaiMessage{Role: "tool", Content: &out, ToolCallID: tc.ID})
		}
	}
	res.Stop = "max_turns"
	return res, nil
}

// The chat completions wire format, as far as the loop uses it.

type openaiRequest struct {
	Model               string              `json:"model"`
	Messages            []openaiMessage     `json:"messages"`
	Tools               []openaiTool        `json:"tools,omitempty"`
	MaxCompletionTokens int64               `json:"max_completion_tokens,omitempty"`
	Stream              bool                `json:"stream"`
	StreamOptions       openaiStreamOptions `json:"stream_options"`
}

type openaiStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type openaiTool struct {
	Type     string         `json:"type"`
	Function openaiFunction `json:"function"`
}

type openaiFunction struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
}

type openaiMessage struct {
	Role       string           `json:"role"`
	Content    *string          `json:"content,omitempty"`
	ToolCalls  []openaiToolCall `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
}

type openaiToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// openaiReply is one assistant message put together from its chunks.
type openaiReply struct {
	content                        string
	toolCalls                      []openaiToolCall
	finishReason                   string
	promptTokens, completionTokens int64
}

func (r *openaiReply) param() openaiMessage {
	m := openaiMessage{Role: "assistant", ToolCalls: r.toolCalls}
	if r.content != "" || len(r.toolCalls) == 0 {
		m.Content = &r.content
	}
	return m
}

// maxToolCalls bounds the tool calls one reply may open (by index).
const maxToolCalls = 1024

// streamOpenAI sends one request and accumulates its streamed chunks.
func streamOpenAI(ctx context.Context, cfg Config, params openaiRequest) (*openaiReply, error) {
	reply := &openaiReply{}
	var content strings.Builder
	var args []*strings.Builder
	choices := 0
	err := stream(ctx, apiRequest{
		url:     strings.TrimSuffix(cfg.BaseURL, "/") + "/chat/completions",
		headers: cfg.withHeaders(map[string]string{"Authorization": "Bearer " + cfg.APIKey}),
		body:    params,
	}, func(_ string, data []byte) error {
		if string(data) == "[DONE]" {
			return nil
		}
		var chunk struct {
			Choices []struct {
				Index int `json:"index"`
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Type     string `json:"type"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				PromptTokens     int64 `json:"prompt_tokens"`
				CompletionTokens int64 `json:"completion_tokens"`
			} `json:"usage"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(data, &chunk); err != nil {
			return fmt.Errorf("model stream: %w", err)
		}
		if chunk.Error != nil {
			return fmt.Errorf("model: %s", chunk.Error.Message)
		}
		if chunk.Usage != nil {
			reply.promptTokens, reply.completionTokens = chunk.Usage.PromptTokens, chunk.Usage.CompletionTokens
		}
		for _, c := range chunk.Choices {
			if c.Index != 0 {
				continue // the loop asks for one choice
			}
			choices++
			content.WriteString(c.Delta.Content)
			if c.FinishReason != nil {
				reply.finishReason = *c.FinishReason
			}
			for _, tc := range c.Delta.ToolCalls {
				if tc.Index < 0 || tc.Index >= maxToolCalls {
					return fmt.Errorf("model stream: tool call index %d", tc.Index)
				}
				for len(reply.toolCalls) <= tc.Index {
					reply.toolCalls = append(reply.toolCalls, openaiToolCall{Type: "function"})
					args = append(args, &strings.Builder{})
				}
				call := &reply.toolCalls[tc.Index]
				if tc.ID != "" {
					call.ID = tc.ID
				}
				if tc.Type != "" {
					call.Type = tc.Type
				}
				call.Function.Name += tc.Function.Name
				args[tc.Index].WriteString(tc.Function.Arguments)
			}
		}
		return nil
	})
	if err != nil {
		return reply, fmt.Errorf("model: %w", err)
	}
	if choices == 0 {
		return reply, fmt.Errorf("model: an empty response")
	}
	reply.content = content.String()
	for i := range reply.toolCalls {
		reply.toolCalls[i].Function.Arguments = args[i].String()
	}
	return reply, nil
}
