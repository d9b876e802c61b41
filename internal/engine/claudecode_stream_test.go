package engine

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/event"
)

// TestStreamHostile: what the CLI prints is the agent's, and a repository
// can make it print anything. Lines split across writes are joined, a line
// over the bound is dropped without being kept, garbage is skipped, fields
// are cut, and the number of events is bounded.
func TestStreamHostile(t *testing.T) {
	t.Parallel()
	call := `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}` + "\n"
	huge := `{"type":"assistant","message":{"content":[{"type":"text","text":"` + strings.Repeat("A", maxStreamLine) + `"}]}}` + "\n"
	long := `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"` + strings.Repeat("B", 2*maxStreamField) + `"}]}]}}` + "\n"
	tests := []struct {
		name    string
		writes  []string
		kinds   []event.Kind
		dropped int
	}{
		{"one call", []string{call}, []event.Kind{event.ToolCall}, 0},
		{"split across writes", []string{call[:7], call[7:40], call[40:]}, []event.Kind{event.ToolCall}, 0},
		{"no final newline", []string{strings.TrimSuffix(call, "\n")}, []event.Kind{event.ToolCall}, 0},
		{"garbage then a call", []string{"\x00\xff not json\n", "[1,2]\n", call}, []event.Kind{event.ToolCall}, 2},
		{"a line over the bound", []string{huge[:maxStreamLine/2], huge[maxStreamLine/2:], call}, []event.Kind{event.ToolCall}, 1},
		{"a long result is cut", []string{long}, []event.Kind{event.ToolResult}, 0},
		{"too many events", []string{strings.Repeat(call, maxStreamEvents+5)}, nil, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var data []event.Payload
			s := newStream(func(d event.Payload) { data = append(data, d) })
			for _, w := range tt.writes {
				if n, err := s.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
				if len(s.line) > maxStreamLine {
					t.Fatalf("kept %d bytes of one line", len(s.line))
				}
			}
			s.flush()
			dropped := 0
			if n := len(data); n > 0 {
				if d, ok := data[n-1].(event.ClaudeDroppedData); ok {
					dropped = d.Dropped
					data = data[:n-1]
				}
			}
			if dropped != tt.dropped {
				t.Errorf("dropped %d, want %d", dropped, tt.dropped)
			}
			if tt.kinds == nil {
				if len(data) != maxStreamEvents {
					t.Errorf("%d events, want the bound %d", len(data), maxStreamEvents)
				}
				return
			}
			if len(data) != len(tt.kinds) {
				t.Fatalf("events %v, want %v", data, tt.kinds)
			}
			for i, d := range data {
				var source, output string
				switch d := d.(type) {
				case event.AgentToolCallData:
					source = d.Source
				case event.ClaudeToolResultData:
					source, output = d.Source, d.Output
				}
				if d.Kind() != tt.kinds[i] || source != event.SourceAgent {
					t.Errorf("event %d: %s %+v", i, d.Kind(), d)
				}
				if len(output) > maxStreamField+100 {
					t.Errorf("a result of %d bytes was not cut", len(output))
				}
			}
		})
	}
}

// TestScriptedCountTokens: the scripted server answers Claude Code's
// token counting with the key, and refuses it without.
func TestScriptedCountTokens(t *testing.T) {
	t.Parallel()
	srv, err := StartScripted("sk-count-0123456789", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, tc := range []struct {
		key  string
		want int
	}{{"sk-count-0123456789", 200}, {"wrong", 401}} {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/messages/count_tokens", strings.NewReader(`{"messages":[{"role":"user","content":"hello there"}]}`))
		req.Header.Set("x-api-key", tc.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want || tc.want == 200 && !strings.Contains(string(body), `"input_tokens":`) {
			t.Errorf("key %q: %d %s", tc.key, resp.StatusCode, body)
		}
	}
}
