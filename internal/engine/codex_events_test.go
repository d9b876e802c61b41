package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/event"
)

// TestCodexEvents: the CLI's JSON lines, written in any pieces, become
// the agent's events; malformed, unknown and oversized lines are logged
// and never emitted, and text is cut.
func TestCodexEvents(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", maxCodexLine+10)
	tests := []struct {
		name  string
		input string
		want  []string // "kind tool-or-text"
	}{
		{"command", `{"type":"item.started","item":{"id":"i1","type":"command_execution","command":"ls"}}` + "\n" +
			`{"type":"item.completed","item":{"id":"i1","type":"command_execution","command":"ls","aggregated_output":"a\n","exit_code":0,"status":"completed"}}` + "\n",
			[]string{"tool_call shell", "tool_result shell"}},
		{"message and patch", `{"type":"item.completed","item":{"id":"i2","type":"agent_message","text":"hi"}}` + "\n" +
			`{"type":"item.started","item":{"id":"i3","type":"file_change","changes":[{"path":"a","kind":"add"}],"status":"in_progress"}}` + "\n",
			[]string{"model_response hi", "tool_call apply_patch"}},
		{"errors", `{"type":"turn.failed","error":{"message":"boom"}}` + "\n" + `{"type":"error","message":"bad"}` + "\n",
			[]string{"error boom", "error bad"}},
		{"malformed and unknown", "not json\n{\"type\":\"thread.started\"}\n{\"type\":\"item.completed\",\"item\":{\"type\":\"mystery\"}}\n", nil},
		{"a line over the bound is skipped whole", `{"type":"item.completed","item":{"type":"agent_message","text":"` + long + `"}}` + "\n" +
			`{"type":"item.completed","item":{"type":"agent_message","text":"after"}}` + "\n", []string{"model_response after"}},
		{"a last line without newline", `{"type":"item.completed","item":{"type":"agent_message","text":"end"}}`, []string{"model_response end"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, piece := range []int{7, 1 << 21} {
				var got []string
				var log bytes.Buffer
				c := newCodexEvents(func(p event.Payload) {
					d := fields(p)
					if d["source"] != event.SourceAgent {
						t.Errorf("event %s not marked as the agent's", p.Kind())
					}
					s := string(p.Kind())
					for _, f := range []string{"tool", "text", "error"} {
						if v, ok := d[f].(string); ok {
							s += " " + v
						}
					}
					got = append(got, s)
				}, &log)
				for in := tc.input; in != ""; {
					n := min(piece, len(in))
					c.Write([]byte(in[:n]))
					in = in[n:]
				}
				c.Close()
				if strings.Join(got, "|") != strings.Join(tc.want, "|") {
					t.Errorf("pieces of %d: got %.200q, want %q", piece, got, tc.want)
				}
				if log.Len() > 2*len(tc.input)+100 || strings.Contains(log.String(), long) {
					t.Errorf("the log holds more than the input, or the oversized line")
				}
			}
		})
	}
}

// fields is an event's data as the record holds it, by key.
func fields(d event.Payload) map[string]any {
	var m map[string]any
	b, _ := json.Marshal(d)
	json.Unmarshal(b, &m)
	return m
}

// TestCodexEventsBounded: text is cut and the count of events is bounded.
func TestCodexEventsBounded(t *testing.T) {
	t.Parallel()
	n := 0
	var text string
	c := newCodexEvents(func(d event.Payload) {
		n++
		if m, ok := d.(event.CodexMessageData); ok {
			text = m.Text
		}
	}, &bytes.Buffer{})
	c.Write([]byte(`{"type":"item.completed","item":{"type":"agent_message","text":"` + strings.Repeat("y", maxEventText*2) + `"}}` + "\n"))
	if len(text) > maxEventText+64 {
		t.Errorf("text of %d bytes", len(text))
	}
	for range maxEvents + 5 {
		c.Write([]byte(`{"type":"item.completed","item":{"type":"agent_message","text":"z"}}` + "\n"))
	}
	if n != maxEvents {
		t.Errorf("%d events, want at most %d", n, maxEvents)
	}
}

// TestCodexConfig: the fork's path is quoted as TOML whatever it holds,
// and the settings that keep the repository and the network out are there.
func TestCodexConfig(t *testing.T) {
	t.Parallel()
	cfg := codexConfig("m\"x", "http://127.0.0.1:1/v1", "/w/a\"]\nevil = 1\n[x")
	for _, want := range []string{`[projects."/w/a\"]\nevil = 1\n[x"]`, `model = "m\"x"`, `trust_level = "untrusted"`,
		`approval_policy = "never"`, `sandbox_mode = "danger-full-access"`, "[analytics]\nenabled = false", `wire_api = "responses"`} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %s:\n%s", want, cfg)
		}
	}
	if strings.Contains(cfg, "\nevil") {
		t.Errorf("a path broke out of its TOML string:\n%s", cfg)
	}
}

// TestNewCodexMissing: a missing CLI names the npm package and the other
// engines.
func TestNewCodexMissing(t *testing.T) {
	t.Parallel()
	_, err := NewCodex(context.Background(), Settings{AgentBin: "/nonexistent/codex"})
	if !errors.Is(err, ErrAgentNotInstalled) || !strings.Contains(err.Error(), "npm install -g @openai/codex@0.169.0") || !strings.Contains(err.Error(), "claude-code") {
		t.Errorf("err = %v", err)
	}
	if _, err := New(context.Background(), "codex", Settings{AgentBin: "/bin/true"}); err == nil {
		t.Error("a codex engine without a model proxy was built")
	}
}
