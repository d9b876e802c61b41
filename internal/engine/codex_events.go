package engine

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/forkbomb/forkbomb/internal/event"
)

// Bounds on the codex CLI's JSON event stream, which the agent (and so
// the model, and the repository it reads) controls: a line longer than
// maxCodexLine is skipped whole, a text field is cut at maxEventText, and
// after maxEvents no more are emitted (the log still gets the lines).
const (
	maxCodexLine = 1 << 20
	maxEventText = 64 << 10
	maxEvents    = 20000
)

const skippedLine = "[forkbomb: an event line over 1 MiB was skipped]\n"

// codexEvents reads `codex exec --json` output as it is written: each
// line to the log, and each event it knows to the record, marked
// "source":"agent" — what the agent says it did, never what forkbomb
// decides on. Unknown or malformed lines are logged and otherwise ignored.
type codexEvents struct {
	emit    func(event.Kind, map[string]any)
	log     io.Writer
	buf     []byte
	skip    bool // inside a line longer than maxCodexLine
	emitted int
}

func newCodexEvents(emit func(event.Kind, map[string]any), log io.Writer) *codexEvents {
	return &codexEvents{emit: emit, log: log}
}

// Write implements io.Writer; the sandbox calls it from one goroutine.
func (c *codexEvents) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if !c.skip {
				c.buf = append(c.buf, p...)
				if len(c.buf) > maxCodexLine {
					c.buf, c.skip = c.buf[:0], true
					c.log.Write([]byte(skippedLine))
				}
			}
			break
		}
		switch {
		case c.skip:
		case len(c.buf)+i > maxCodexLine:
			c.log.Write([]byte(skippedLine))
		default:
			c.buf = append(c.buf, p[:i]...)
			c.line(c.buf)
		}
		c.buf, c.skip = c.buf[:0], false
		p = p[i+1:]
	}
	return n, nil
}

// Close handles a last line without its newline.
func (c *codexEvents) Close() error {
	if len(c.buf) > 0 && !c.skip {
		c.line(c.buf)
	}
	c.buf = nil
	return nil
}

// codexEvent is the part of a codex event forkbomb reads.
type codexEvent struct {
	Type string `json:"type"`
	Item *struct {
		ID               string          `json:"id"`
		Type             string          `json:"type"`
		Text             string          `json:"text"`
		Message          string          `json:"message"`
		Command          string          `json:"command"`
		AggregatedOutput string          `json:"aggregated_output"`
		ExitCode         *int            `json:"exit_code"`
		Status           string          `json:"status"`
		Changes          json.RawMessage `json:"changes"`
		Server           string          `json:"server"`
		Tool             string          `json:"tool"`
		Query            string          `json:"query"`
	} `json:"item"`
	Message string `json:"message"`
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (c *codexEvents) line(b []byte) {
	c.log.Write(b)
	c.log.Write([]byte{'\n'})
	var e codexEvent
	if json.Unmarshal(b, &e) != nil || c.emitted >= maxEvents {
		return
	}
	send := func(k event.Kind, d map[string]any) {
		d["source"] = "agent"
		c.emitted++
		c.emit(k, d)
	}
	switch e.Type {
	case "turn.failed":
		if e.Error != nil {
			send(event.Error, map[string]any{"error": truncate(e.Error.Message, maxEventText)})
		}
	case "error":
		send(event.Error, map[string]any{"error": truncate(e.Message, maxEventText)})
	case "item.started", "item.completed":
		if e.Item != nil {
			c.item(e.Type == "item.completed", e, send)
		}
	}
}

// item turns one of codex's items into a tool call when it starts and a
// result (or a model response) when it completes.
func (c *codexEvents) item(done bool, e codexEvent, send func(event.Kind, map[string]any)) {
	it := e.Item
	id := truncate(it.ID, 64)
	switch it.Type {
	case "agent_message":
		if done {
			send(event.ModelResponse, map[string]any{"id": id, "text": truncate(it.Text, maxEventText)})
		}
	case "error":
		if done {
			send(event.Error, map[string]any{"id": id, "error": truncate(it.Message, maxEventText)})
		}
	case "command_execution":
		if !done {
			send(event.ToolCall, map[string]any{"id": id, "tool": "shell", "input": map[string]any{"command": truncate(it.Command, maxEventText)}})
			return
		}
		d := map[string]any{"id": id, "tool": "shell", "status": truncate(it.Status, 64), "output": truncate(it.AggregatedOutput, maxEventText)}
		if it.ExitCode != nil {
			d["exit_code"] = *it.ExitCode
		}
		d["error"] = it.ExitCode == nil || *it.ExitCode != 0
		send(event.ToolResult, d)
	case "file_change":
		k := event.ToolCall
		d := map[string]any{"id": id, "tool": "apply_patch", "input": map[string]any{"changes": boundedJSON(it.Changes)}}
		if done {
			k = event.ToolResult
			d = map[string]any{"id": id, "tool": "apply_patch", "status": truncate(it.Status, 64), "error": it.Status != "completed"}
		}
		send(k, d)
	case "mcp_tool_call", "web_search":
		if !done {
			send(event.ToolCall, map[string]any{"id": id, "tool": truncate(it.Type, 64), "server": truncate(it.Server, 256),
				"name": truncate(it.Tool, 256), "query": truncate(it.Query, maxEventText)})
			return
		}
		send(event.ToolResult, map[string]any{"id": id, "tool": truncate(it.Type, 64), "status": truncate(it.Status, 64)})
	}
}

// boundedJSON keeps a JSON value that is small enough to record, and says
// so when it is not.
func boundedJSON(v json.RawMessage) any {
	if len(v) == 0 {
		return nil
	}
	if len(v) > maxEventText {
		return "[too long to record]"
	}
	return v
}
