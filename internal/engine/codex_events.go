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
	emit    func(event.Payload)
	log     io.Writer
	buf     []byte
	skip    bool // inside a line longer than maxCodexLine
	emitted int
}

func newCodexEvents(emit func(event.Payload), log io.Writer) *codexEvents {
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
	send := func(d event.Payload) { // each marked as the agent's word
		c.emitted++
		c.emit(d)
	}
	switch e.Type {
	case "turn.failed":
		if e.Error != nil {
			send(event.CodexErrorData{Source: event.SourceAgent, Error: truncate(e.Error.Message, maxEventText)})
		}
	case "error":
		send(event.CodexErrorData{Source: event.SourceAgent, Error: truncate(e.Message, maxEventText)})
	case "item.started", "item.completed":
		if e.Item != nil {
			c.item(e.Type == "item.completed", e, send)
		}
	}
}

// item turns one of codex's items into a tool call when it starts and a
// result (or a model response) when it completes.
func (c *codexEvents) item(done bool, e codexEvent, send func(event.Payload)) {
	it := e.Item
	id := truncate(it.ID, 64)
	const agent = event.SourceAgent
	switch it.Type {
	case "agent_message":
		if done {
			send(event.CodexMessageData{Source: agent, ID: id, Text: truncate(it.Text, maxEventText)})
		}
	case "error":
		if done {
			send(event.CodexItemErrorData{Source: agent, ID: id, Error: truncate(it.Message, maxEventText)})
		}
	case "command_execution":
		if !done {
			send(event.AgentToolCallData{Source: agent, ID: id, Tool: "shell", Input: event.CodexCommandInput{Command: truncate(it.Command, maxEventText)}})
			return
		}
		send(event.CodexCommandResultData{Source: agent, ID: id, Tool: "shell", Status: truncate(it.Status, 64),
			Output: truncate(it.AggregatedOutput, maxEventText), ExitCode: it.ExitCode, Error: it.ExitCode == nil || *it.ExitCode != 0})
	case "file_change":
		if !done {
			send(event.AgentToolCallData{Source: agent, ID: id, Tool: "apply_patch", Input: event.CodexChangesInput{Changes: boundedJSON(it.Changes)}})
			return
		}
		send(event.CodexPatchResultData{Source: agent, ID: id, Tool: "apply_patch", Status: truncate(it.Status, 64), Error: it.Status != "completed"})
	case "mcp_tool_call", "web_search":
		if !done {
			send(event.CodexToolCallData{Source: agent, ID: id, Tool: truncate(it.Type, 64), Server: truncate(it.Server, 256),
				Name: truncate(it.Tool, 256), Query: truncate(it.Query, maxEventText)})
			return
		}
		send(event.CodexToolResultData{Source: agent, ID: id, Tool: truncate(it.Type, 64), Status: truncate(it.Status, 64)})
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
	return event.JSON(v)
}
