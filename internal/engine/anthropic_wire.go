package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// The Anthropic Messages API's wire format, as far as the tool loop uses
// it: text, tool_use and tool_result blocks, streamed back as
// message_start, content_block_start/delta/stop and message_delta events.

type anthropicRequest struct {
	Model     string             `json:"model"`
	MaxTokens int64              `json:"max_tokens"`
	System    []anthropicBlock   `json:"system,omitempty"`
	Messages  []anthropicMessage `json:"messages"`
	Tools     []anthropicTool    `json:"tools,omitempty"`
	Stream    bool               `json:"stream"`
}

type anthropicTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	InputSchema map[string]any `json:"input_schema"`
}

type anthropicMessage struct {
	Role    string           `json:"role"`
	Content []anthropicBlock `json:"content"`
}

// anthropicBlock is any content block; Type says which fields it has.
// Text is a pointer so that an empty text block still says "text": "".
type anthropicBlock struct {
	Type      string           `json:"type"`
	Text      *string          `json:"text,omitempty"`
	ID        string           `json:"id,omitempty"`
	Name      string           `json:"name,omitempty"`
	Input     json.RawMessage  `json:"input,omitempty"`
	ToolUseID string           `json:"tool_use_id,omitempty"`
	Content   []anthropicBlock `json:"content,omitempty"`
	IsError   bool             `json:"is_error,omitempty"`
}

// anthropicReply is one assistant message put together from its stream.
type anthropicReply struct {
	content                   []anthropicBlock
	stopReason                string
	inputTokens, outputTokens int64
}

func (m *anthropicReply) text() string {
	var b strings.Builder
	for _, c := range m.content {
		if c.Type == "text" && c.Text != nil {
			b.WriteString(*c.Text)
		}
	}
	return b.String()
}

// anthropicEvent is one streamed event, any of the types handled.
type anthropicEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message struct {
		Usage struct {
			InputTokens  int64 `json:"input_tokens"`
			OutputTokens int64 `json:"output_tokens"`
		} `json:"usage"`
	} `json:"message"`
	ContentBlock anthropicBlock `json:"content_block"`
	Delta        struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage struct {
		OutputTokens int64 `json:"output_tokens"`
	} `json:"usage"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// param is the reply as the next request's assistant message: its text and
// tool_use blocks (the only kinds the loop asks for), without empty text
// blocks, which the API refuses.
func (m *anthropicReply) param() []anthropicBlock {
	var out []anthropicBlock
	for _, c := range m.content {
		if (c.Type == "text" && c.Text != nil && *c.Text != "") || c.Type == "tool_use" {
			out = append(out, c)
		}
	}
	return out
}

// streamAnthropic sends one request and accumulates its streamed answer.
func streamAnthropic(ctx context.Context, cfg Config, params anthropicRequest) (*anthropicReply, error) {
	msg := &anthropicReply{}
	var texts []*strings.Builder // per block index: text or tool input JSON
	headers := map[string]string{"anthropic-version": "2023-06-01"}
	if cfg.Bearer {
		headers["Authorization"] = "Bearer " + cfg.APIKey
	} else {
		headers["x-api-key"] = cfg.APIKey
	}
	err := stream(ctx, apiRequest{
		url:     strings.TrimSuffix(cfg.BaseURL, "/") + "/v1/messages",
		headers: cfg.withHeaders(headers),
		body:    params,
	}, func(_ string, data []byte) error {
		var ev anthropicEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return fmt.Errorf("model stream: %w", err)
		}
		switch ev.Type {
		case "message_start":
			msg.inputTokens = ev.Message.Usage.InputTokens
			msg.outputTokens = ev.Message.Usage.OutputTokens
		case "content_block_start":
			if ev.Index != len(msg.content) {
				return fmt.Errorf("model stream: block %d started out of order", ev.Index)
			}
			b := ev.ContentBlock
			b.Input, b.Text = nil, nil
			msg.content = append(msg.content, b)
			texts = append(texts, &strings.Builder{})
			if t := ev.ContentBlock.Text; t != nil {
				texts[ev.Index].WriteString(*t)
			}
		case "content_block_delta":
			if ev.Index < 0 || ev.Index >= len(texts) {
				return fmt.Errorf("model stream: a delta for block %d, which was not started", ev.Index)
			}
			switch ev.Delta.Type {
			case "text_delta":
				texts[ev.Index].WriteString(ev.Delta.Text)
			case "input_json_delta":
				texts[ev.Index].WriteString(ev.Delta.PartialJSON)
			}
		case "message_delta":
			msg.stopReason = ev.Delta.StopReason
			msg.outputTokens = ev.Usage.OutputTokens
		case "error":
			return fmt.Errorf("model: %s: %s", ev.Error.Type, ev.Error.Message)
		}
		return nil
	})
	if err != nil {
		return msg, fmt.Errorf("model: %w", err)
	}
	for i := range msg.content {
		b := &msg.content[i]
		s := texts[i].String()
		switch b.Type {
		case "text":
			b.Text = &s
		case "tool_use":
			if strings.TrimSpace(s) == "" {
				s = "{}"
			}
			if !json.Valid([]byte(s)) {
				return msg, fmt.Errorf("model stream: tool input is not JSON")
			}
			b.Input = json.RawMessage(s)
		}
	}
	return msg, nil
}
