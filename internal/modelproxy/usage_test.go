package modelproxy

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/event"
)

// sse writes events one at a time, flushing each, as the APIs stream.
func sse(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range events {
		fmt.Fprintf(w, "%s\n\n", e)
		w.(http.Flusher).Flush()
	}
}

var anthropicStream = []string{
	"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-x\",\"usage\":{\"input_tokens\":100,\"cache_read_input_tokens\":20,\"output_tokens\":1}}}",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"{\\\"usage\\\":{\\\"output_tokens\\\":999999}}\"}}",
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":15}}",
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"output_tokens\":42}}",
	"event: message_stop\ndata: {\"type\":\"message_stop\"}",
}

var responsesStream = []string{
	"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r1\",\"model\":\"gpt-x\",\"usage\":null}}",
	"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}",
	"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r1\",\"model\":\"gpt-x\",\"output\":[{\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"" + strings.Repeat("x", 70000) + "\"}]}],\"usage\":{\"input_tokens\":300,\"output_tokens\":7,\"total_tokens\":307}}}",
}

// TestUsage: tokens and cost are read from what the upstream sent, in each
// format the agents use, whatever the fork claims in its request (a
// forged usage object) or the model writes in its text (a usage-shaped
// string inside a delta); the answer reaches the fork byte for byte.
func TestUsage(t *testing.T) {
	t.Parallel()
	price := func(model string) (float64, float64) {
		switch model {
		case "claude-x":
			return 3, 15
		case "gpt-x":
			return 1, 10
		}
		return 0, 0
	}
	forged := `,"usage":{"input_tokens":999999,"output_tokens":999999}`
	cases := []struct {
		name          string
		kind, path    string
		model         string
		answer        func(w http.ResponseWriter)
		in, out, cost int64
	}{
		{"anthropic stream", Anthropic, "/v1/messages", "claude-x", func(w http.ResponseWriter) { sse(w, anthropicStream...) }, 120, 42, 120*3 + 42*15},
		{"responses stream", OpenAI, "/v1/responses", "gpt-x", func(w http.ResponseWriter) { sse(w, responsesStream...) }, 300, 7, 300 + 70},
		{"anthropic plain", Anthropic, "/v1/messages", "claude-x", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, "{\n  \"type\": \"message\",\n  \"model\": \"claude-x\",\n  \"usage\": {\"input_tokens\": 5, \"output_tokens\": 6}\n}")
		}, 5, 6, 5*3 + 6*15},
		{"responses plain", OpenAI, "/v1/responses", "gpt-x", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"response","model":"gpt-x","usage":{"input_tokens":11,"output_tokens":12}}`)
		}, 11, 12, 11 + 120},
		{"chat plain", OpenAI, "/v1/chat/completions", "gpt-x", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"chat.completion","usage":{"prompt_tokens":8,"completion_tokens":9}}`)
		}, 8, 9, 8 + 90},
		{"chat stream", OpenAI, "/v1/chat/completions", "gpt-x", func(w http.ResponseWriter) {
			sse(w, `data: {"choices":[{"delta":{"content":"a"}}]}`, `data: {"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2}}`, `data: [DONE]`)
		}, 4, 2, 4 + 20},
		{"error answer", Anthropic, "/v1/messages", "claude-x", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error"}}`)
		}, 0, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var sent strings.Builder
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				rec := &teeWriter{ResponseWriter: w, b: &sent}
				c.answer(rec)
			})
			key := realAnthropicKey
			if c.kind == OpenAI {
				key = realOpenAIKey
			}
			_, ep, rec := startProxy(t, Options{Upstreams: []Upstream{{Kind: c.kind, BaseURL: up.URL, APIKey: key}}, Price: price})
			_, body := post(t, ep, c.path, `{"model":"`+c.model+`","stream":true`+forged+`}`, nil)
			if body != sent.String() {
				t.Errorf("the fork got %d bytes, the upstream sent %d", len(body), sent.Len())
			}
			u := ep.Usage()
			if u.TokensIn != c.in || u.TokensOut != c.out || u.CostMicroUSD != c.cost || u.Requests != 1 {
				t.Errorf("usage %+v, want in %d out %d cost %d", u, c.in, c.out, c.cost)
			}
			evs := of[event.ProxyResponseData](rec)
			if rec.count(event.ModelResponse) != 1 || len(evs) != 1 || evs[0].TokensIn != c.in || evs[0].TokensOut != c.out || evs[0].Model != c.model || evs[0].Via != event.ViaProxy {
				t.Errorf("model_response events %v", evs)
			}
			scanEvents(t, rec, ep.Placeholder)
		})
	}
}

// teeWriter keeps a copy of what a handler writes.
type teeWriter struct {
	http.ResponseWriter
	b *strings.Builder
}

func (t *teeWriter) Write(p []byte) (int, error) { t.b.Write(p); return t.ResponseWriter.Write(p) }
func (t *teeWriter) Flush()                      { t.ResponseWriter.(http.Flusher).Flush() }

// TestStreamFlushed: each event reaches the fork while the upstream is
// still streaming — the upstream sends its next event only after the
// fork has read the previous one through the proxy, so a proxy that
// buffered the stream would hang here (bounded by the test's deadline)
// rather than pass.
func TestStreamFlushed(t *testing.T) {
	t.Parallel()
	next := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i, e := range anthropicStream {
			if i > 0 {
				select {
				case <-next:
				case <-r.Context().Done():
					return
				}
			}
			fmt.Fprintf(w, "%s\n\n", e)
			w.(http.Flusher).Flush()
		}
	})
	_, ep, _ := startProxy(t, Options{Upstreams: []Upstream{{Kind: Anthropic, BaseURL: up.URL, APIKey: realAnthropicKey}}})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ep.BaseURL()+"/v1/messages", strings.NewReader(`{"model":"claude-x"}`))
	resp, err := client(ep).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for i := range anthropicStream {
		for { // one event: lines up to the blank one
			l, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended early: %v", err)
			}
			if l == "\n" {
				break
			}
		}
		if i < len(anthropicStream)-1 {
			next <- struct{}{}
		}
	}
	if u := ep.Usage(); u.TokensIn != 120 || u.TokensOut != 42 {
		t.Errorf("usage %+v", u)
	}
}
