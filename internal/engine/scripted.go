package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"sync"
	"unicode/utf8"
)

// Step is one scripted model turn: some text, then tool calls (or none,
// which ends the conversation).
type Step struct {
	Text  string
	Tools []ToolCall
	// Hold, when set, runs before the step is answered: a test holds
	// the agent's turn open for what it waits on meanwhile.
	Hold func()
}

// ToolCall is a tool_use block the scripted model emits.
type ToolCall struct {
	Name  string
	Input map[string]any
}

// Scripted is a model server speaking the Anthropic Messages protocol
// (streaming server-sent events), and OpenAI's chat completions and
// Responses protocols, on loopback, that plays a script chosen by the
// "[persona: NAME]" tag in a conversation's first message (or, with no
// tag, by the model asked for), one step per assistant turn. It stands in for the network forkbomb's demo and
// tests do not have; the code under test talks to it exactly as to the
// real API.
type Scripted struct {
	URL     string
	Key     string // the x-api-key it accepts
	Scripts map[string][]Step

	srv      *http.Server
	mu       sync.Mutex
	requests int
}

// Compiled on first use: every forkbomb process, each sandbox init
// included, would pay for it at start-up.
var personaRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[persona: ?([A-Za-z0-9_-]+)\]`) })

// StartScripted listens on 127.0.0.1 and serves until Close.
func StartScripted(key string, scripts map[string][]Step) (*Scripted, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Scripted{URL: "http://" + ln.Addr().String(), Key: key, Scripts: scripts}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.messages)
	mux.HandleFunc("POST /v1/messages/count_tokens", s.countTokens) // Claude Code
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	mux.HandleFunc("POST /v1/responses", s.responses)
	s.srv = &http.Server{Handler: mux}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server.
func (s *Scripted) Close() error { return s.srv.Close() }

// Requests counts the calls served.
func (s *Scripted) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// next reads a request of either protocol: its number, its size, and the
// scripted step for it — the persona tagged in the conversation's first
// user message, at the turn its count of assistant messages says. ok is
// false when it already answered with an error.
func (s *Scripted) next(w http.ResponseWriter, r *http.Request, authorized bool) (n, size int, step Step, ok bool) {
	s.mu.Lock()
	s.requests++
	n = s.requests
	s.mu.Unlock()
	if !authorized {
		http.Error(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid key"}}`, http.StatusUnauthorized)
		return n, 0, step, false
	}
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad body"}}`, http.StatusBadRequest)
		return n, 0, step, false
	}
	persona, turn := "", 0
	for _, m := range req.Messages {
		if m.Role == "user" && persona == "" {
			if p := personaRE().FindSubmatch(m.Content); p != nil {
				persona = string(p[1])
			}
		}
		if m.Role == "assistant" {
			turn++
		}
	}
	return n, len(body), s.step(persona, req.Model, turn), true
}

// step is the step of a conversation tagged persona (or, with no tag, of
// the model named: two "models" of one engine can be told apart, as
// forkbomb eval's tests do; else the script of "" plays) at turn, once
// its Hold, if any, has run.
func (s *Scripted) step(persona, model string, turn int) Step {
	if _, ok := s.Scripts[model]; persona == "" && ok {
		persona = model
	}
	step := Step{Text: "I have nothing more to do."}
	if sc := s.Scripts[persona]; turn < len(sc) {
		step = sc[turn]
	}
	if step.Hold != nil {
		step.Hold()
	}
	return step
}

func (s *Scripted) messages(w http.ResponseWriter, r *http.Request) {
	n, size, step, ok := s.next(w, r, r.Header.Get("x-api-key") == s.Key || r.Header.Get("Authorization") == "Bearer "+s.Key)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	send := func(event string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if fl != nil {
			fl.Flush()
		}
	}
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_scripted_%d", n), "type": "message", "role": "assistant", "content": []any{},
		"model": "scripted", "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": size / 4, "output_tokens": 1},
	}})
	idx := 0
	if step.Text != "" {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, chunk := range chunks(step.Text, 24) {
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "text_delta", "text": chunk}})
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	for i, tc := range step.Tools {
		input, _ := json.Marshal(tc.Input)
		send("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{
			"type": "tool_use", "id": fmt.Sprintf("toolu_%d_%d", n, i), "name": tc.Name, "input": map[string]any{}}})
		for _, chunk := range chunks(string(input), 16) {
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": chunk}})
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	stop := "end_turn"
	if len(step.Tools) > 0 {
		stop = "tool_use"
	}
	send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 10 + len(step.Text)/4}})
	send("message_stop", map[string]any{"type": "message_stop"})
}

// chat serves the OpenAI chat completions protocol (streaming), playing
// the same scripts.
func (s *Scripted) chat(w http.ResponseWriter, r *http.Request) {
	n, size, step, ok := s.next(w, r, r.Header.Get("Authorization") == "Bearer "+s.Key)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	id := fmt.Sprintf("chatcmpl-scripted-%d", n)
	send := func(choices []any, usage any) {
		chunk := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1, "model": "scripted", "choices": choices}
		if usage != nil {
			chunk["usage"] = usage
		}
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	delta := func(d map[string]any, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}}
	}
	send(delta(map[string]any{"role": "assistant", "content": ""}, nil), nil)
	for _, c := range chunks(step.Text, 24) {
		if c != "" {
			send(delta(map[string]any{"content": c}, nil), nil)
		}
	}
	for i, tc := range step.Tools {
		args, _ := json.Marshal(tc.Input)
		send(delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": fmt.Sprintf("call_%d_%d", n, i), "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""}}}}, nil), nil)
		for _, c := range chunks(string(args), 16) {
			send(delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": c}}}}, nil), nil)
		}
	}
	finish := "stop"
	if len(step.Tools) > 0 {
		finish = "tool_calls"
	}
	send(delta(map[string]any{}, finish), nil)
	send([]any{}, map[string]any{"prompt_tokens": size / 4, "completion_tokens": 10 + len(step.Text)/4, "total_tokens": size/4 + 10})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// chunks splits s into pieces of about n bytes, on rune boundaries.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		cut := n
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return append(out, s)
}

// Env is an environment in which this server is every engine's model: the
// variables the engines read for their model's endpoint and key
// (Descriptor.Env, Descriptor.Upstream — a gateway's included) name it,
// and no other is set. The demo readies its engines in it.
func (s *Scripted) Env(name string) string {
	switch name {
	case "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "FORKBOMB_GATEWAY_URL":
		return s.URL
	case "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "FORKBOMB_API_KEY":
		return s.Key
	}
	return ""
}
