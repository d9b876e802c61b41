package engine

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/forkbomb/forkbomb/internal/event"
)

// Bounds of what an agent CLI's stream may become in the record. What it
// prints is hostile (a repository can make the agent print anything): a
// line past maxStreamLine is dropped unread, a field is cut at
// maxStreamField, and past maxStreamEvents nothing more is emitted.
const (
	maxStreamLine   = 1 << 20
	maxStreamField  = 64 << 10
	maxStreamEvents = 10000
)

// stream turns the CLI's stream-json lines (one JSON object each) into
// events marked "source":"agent": what the agent says it did. Nothing the
// trusted side decides is read from them. It is an io.Writer fed by the
// sandbox's output copy.
type agentStream struct {
	emit func(event.Payload)

	mu       sync.Mutex
	line     []byte
	skipping bool // inside a line longer than maxStreamLine
	events   int
	dropped  int // lines and events left out
}

func newStream(emit func(event.Payload)) *agentStream {
	return &agentStream{emit: emit}
}

// Write implements io.Writer; it never fails, so the CLI's log is written
// whatever the stream holds.
func (s *agentStream) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		part := b
		if i >= 0 {
			part = b[:i]
		}
		if !s.skipping && len(s.line)+len(part) > maxStreamLine {
			s.skipping, s.line = true, s.line[:0]
			s.dropped++
		}
		if !s.skipping {
			s.line = append(s.line, part...)
		}
		if i < 0 {
			break
		}
		if !s.skipping {
			s.parse(s.line)
		}
		s.line, s.skipping = s.line[:0], false
		b = b[i+1:]
	}
	return n, nil
}

// flush parses a last line without a newline, and reports what was left
// out.
func (s *agentStream) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.line) > 0 && !s.skipping {
		s.parse(s.line)
	}
	s.line = nil
	if s.dropped > 0 {
		s.emit(event.ClaudeDroppedData{Source: event.SourceAgent, Dropped: s.dropped})
	}
}

// ccLine is the part of a stream-json line forkbomb reads. Every field is
// optional; a line that is not this shape is skipped.
type ccLine struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	Message struct {
		Model   string    `json:"model"`
		Content []ccBlock `json:"content"`
		Usage   struct {
			In  int64 `json:"input_tokens"`
			Out int64 `json:"output_tokens"`
		} `json:"usage"`
	} `json:"message"`
	// system/init
	Version    string   `json:"claude_code_version"`
	Tools      []string `json:"tools"`
	MCPServers []any    `json:"mcp_servers"`
	// result
	NumTurns int     `json:"num_turns"`
	CostUSD  float64 `json:"total_cost_usd"`
	IsError  bool    `json:"is_error"`
	Result   string  `json:"result"`
}

type ccBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // a string or a list of blocks
	IsError   bool            `json:"is_error"`
}

func (s *agentStream) parse(line []byte) {
	var l ccLine
	if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &l) != nil {
		s.dropped++
		return
	}
	switch l.Type {
	case "system":
		if l.Subtype == "init" {
			s.add(event.ClaudeInitData{Source: event.SourceAgent, Init: true, Version: cut(l.Version), Tools: cutList(l.Tools), MCPServers: len(l.MCPServers)})
		}
	case "assistant":
		for _, b := range l.Message.Content {
			switch b.Type {
			case "text":
				s.add(event.ClaudeTextData{Source: event.SourceAgent, Text: cut(b.Text), Model: cut(l.Message.Model),
					TokensIn: l.Message.Usage.In, TokensOut: l.Message.Usage.Out})
			case "tool_use":
				s.add(event.AgentToolCallData{Source: event.SourceAgent, Tool: cut(b.Name), ID: cut(b.ID), Input: rawField(b.Input)})
			}
		}
	case "user":
		for _, b := range l.Message.Content {
			if b.Type == "tool_result" {
				s.add(event.ClaudeToolResultData{Source: event.SourceAgent, ID: cut(b.ToolUseID), Error: b.IsError, Output: resultText(b.Content)})
			}
		}
	case "result":
		s.add(event.ClaudeResultData{Source: event.SourceAgent, Final: true, Subtype: cut(l.Subtype), Turns: l.NumTurns,
			ClaimedCostUSD: l.CostUSD, IsError: l.IsError, Text: cut(l.Result)})
	}
}

// add emits one event (each marked as the agent's word) until the bound.
func (s *agentStream) add(data event.Payload) {
	if s.events >= maxStreamEvents {
		s.dropped++
		return
	}
	s.events++
	s.emit(data)
}

func cut(v string) string { return truncate(v, maxStreamField) }

func cutList(v []string) []string {
	if len(v) > 200 {
		v = v[:200]
	}
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = truncate(x, 200)
	}
	return out
}

// rawField keeps a tool's input as JSON when it is small, else as cut text.
func rawField(raw json.RawMessage) any {
	if len(raw) <= maxStreamField {
		return event.JSON(raw)
	}
	return cut(string(raw))
}

// resultText is a tool result's text: a string, or the text blocks of a
// list, cut.
func resultText(raw json.RawMessage) string {
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return cut(str)
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var b bytes.Buffer
	for _, x := range blocks {
		if x.Type == "text" {
			b.WriteString(x.Text)
			if b.Len() > maxStreamField {
				break
			}
		}
	}
	return cut(b.String())
}
