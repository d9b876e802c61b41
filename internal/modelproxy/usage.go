package modelproxy

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Bounds on what the meter keeps of an answer: one SSE line, or a whole
// plain JSON answer. Beyond them the meter stops reading (the answer still
// passes through whole); its usage then counts as 0.
const (
	maxLine  = 4 << 20 // a Responses API response.completed repeats the whole output
	maxPlain = 8 << 20
)

// meter reads token usage from an upstream's answer as it streams past:
// server-sent events line by line (Anthropic message_start/message_delta,
// OpenAI response.completed, chat completion chunks), or a plain JSON
// answer whole. It reads what the upstream sent, never the fork.
type meter struct {
	sse   bool
	buf   []byte // the current line (sse) or the answer so far (plain)
	over  bool   // the current line or the answer passed its bound
	in    int64
	out   int64
	model string
}

func newMeter(contentType string) *meter {
	return &meter{sse: strings.HasPrefix(strings.ToLower(strings.TrimSpace(contentType)), "text/event-stream")}
}

// Write takes the next piece of the answer.
func (m *meter) Write(p []byte) {
	if !m.sse {
		if m.over || len(m.buf)+len(p) > maxPlain {
			m.over, m.buf = true, nil
			return
		}
		m.buf = append(m.buf, p...)
		return
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !m.over {
			if len(m.buf)+len(chunk) > maxLine {
				m.over, m.buf = true, m.buf[:0]
			} else {
				m.buf = append(m.buf, chunk...)
			}
		}
		if i < 0 {
			return
		}
		if !m.over {
			m.line(m.buf)
		}
		m.buf, m.over = m.buf[:0], false
		p = p[i+1:]
	}
}

// finish reads what is left: the plain answer, or a last line without its
// newline.
func (m *meter) finish() {
	if !m.over && len(m.buf) > 0 {
		if m.sse {
			m.line(m.buf)
		} else {
			m.doc(m.buf)
		}
	}
	m.buf = nil
}

// line reads one SSE line; only data lines carry JSON.
func (m *meter) line(l []byte) {
	l = bytes.TrimSuffix(l, []byte("\r"))
	d, ok := bytes.CutPrefix(l, []byte("data:"))
	if !ok {
		return
	}
	m.doc(bytes.TrimSpace(d))
}

// usageFields is every API's usage object at once: Anthropic
// (input/output and cache tokens), Responses (input/output), chat
// completions (prompt/completion).
type usageFields struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	PromptTokens             int64 `json:"prompt_tokens"`
	CompletionTokens         int64 `json:"completion_tokens"`
}

type withUsage struct {
	Model string       `json:"model"`
	Usage *usageFields `json:"usage"`
}

// usageDoc finds usage at the top (plain answers, message_delta, chat
// chunks), under "message" (message_start) or under "response"
// (response.completed).
type usageDoc struct {
	withUsage
	Message  *withUsage `json:"message"`
	Response *withUsage `json:"response"`
}

// doc reads one JSON document. Every API reports usage cumulatively
// (message_delta's output_tokens is the total so far), so the last
// non-zero count of each side wins.
func (m *meter) doc(b []byte) {
	var d usageDoc
	if json.Unmarshal(b, &d) != nil {
		return
	}
	for _, w := range []*withUsage{&d.withUsage, d.Message, d.Response} {
		if w == nil {
			continue
		}
		if w.Model != "" && m.model == "" {
			m.model = clip(w.Model, 100)
		}
		if u := w.Usage; u != nil {
			if in := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens + u.PromptTokens; in > 0 {
				m.in = in
			}
			if out := u.OutputTokens + u.CompletionTokens; out > 0 {
				m.out = out
			}
		}
	}
}
