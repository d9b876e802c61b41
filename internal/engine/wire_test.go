package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// TestWireFormat: what each loop sends, recorded between it and the
// scripted model, is the vendor's request shape — the scripted server
// reads little of it, the real APIs refuse the rest. Two turns: a tool
// call, then its result; the second request must carry the first reply
// back (the tool call, by id, with its input as an object or arguments as
// a string) and the result tied to it, and never an empty text block.
func TestWireFormat(t *testing.T) {
	t.Parallel()
	script := map[string][]Step{"w": {
		{Tools: []ToolCall{{Name: "shell", Input: map[string]any{"command": "ls"}}}},
		{Text: "Done."},
	}}
	cases := []struct {
		name  string
		run   func(Config) (*Result, error)
		path  string
		check func(t *testing.T, h http.Header, second map[string]any)
	}{
		{"anthropic", func(c Config) (*Result, error) { return RunAnthropic(context.Background(), c, "[persona: w] go") }, "",
			func(t *testing.T, h http.Header, req map[string]any) {
				if h.Get("x-api-key") != "k-wire" || h.Get("anthropic-version") == "" || h.Get("Authorization") != "" {
					t.Errorf("headers %v", h)
				}
				want := `{"messages":[` +
					`{"content":[{"text":"[persona: w] go","type":"text"}],"role":"user"},` +
					`{"content":[{"id":"toolu_1_0","input":{"command":"ls"},"name":"shell","type":"tool_use"}],"role":"assistant"},` +
					`{"content":[{"content":[{"text":"ran ls","type":"text"}],"tool_use_id":"toolu_1_0","type":"tool_result"}],"role":"user"}],` +
					`"model":"scripted","stream":true}`
				delete(req, "tools")
				delete(req, "max_tokens")
				if got := canon(t, req); got != want {
					t.Errorf("second request\n got %s\nwant %s", got, want)
				}
			}},
		{"openai", func(c Config) (*Result, error) { return RunOpenAI(context.Background(), c, "[persona: w] go") }, "/v1",
			func(t *testing.T, h http.Header, req map[string]any) {
				if h.Get("Authorization") != "Bearer k-wire" || h.Get("x-api-key") != "" {
					t.Errorf("headers %v", h)
				}
				want := `{"messages":[` +
					`{"content":"[persona: w] go","role":"user"},` +
					`{"role":"assistant","tool_calls":[{"function":{"arguments":"{\"command\":\"ls\"}","name":"shell"},"id":"call_1_0","type":"function"}]},` +
					`{"content":"ran ls","role":"tool","tool_call_id":"call_1_0"}],` +
					`"model":"scripted","stream":true,"stream_options":{"include_usage":true}}`
				delete(req, "tools")
				if got := canon(t, req); got != want {
					t.Errorf("second request\n got %s\nwant %s", got, want)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv, err := StartScripted("k-wire", script)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			target, _ := url.Parse(srv.URL)
			proxy := httputil.NewSingleHostReverseProxy(target)
			var mu sync.Mutex
			var bodies [][]byte
			var headers []http.Header
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				bodies, headers = append(bodies, b), append(headers, r.Header.Clone())
				mu.Unlock()
				r.Body = io.NopCloser(bytes.NewReader(b))
				proxy.ServeHTTP(w, r)
			}))
			defer front.Close()
			res, err := c.run(Config{BaseURL: front.URL + c.path, APIKey: "k-wire", Model: "scripted",
				Shell: func(_ context.Context, cmd string) string { return "ran " + cmd }})
			if err != nil || res.Turns != 2 {
				t.Fatalf("run: %+v, %v", res, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(bodies) != 2 {
				t.Fatalf("%d requests, want 2", len(bodies))
			}
			var first, second map[string]any
			if json.Unmarshal(bodies[0], &first) != nil || json.Unmarshal(bodies[1], &second) != nil {
				t.Fatalf("bodies are not JSON: %s / %s", bodies[0], bodies[1])
			}
			if tools, _ := first["tools"].([]any); len(tools) != 2 || !strings.Contains(string(bodies[0]), `"object"`) {
				t.Errorf("tools %s", bodies[0])
			}
			c.check(t, headers[1], second)
		})
	}
}

// canon is v as JSON with sorted keys (encoding/json sorts map keys).
func canon(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
