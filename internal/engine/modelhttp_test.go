package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestModelStreamHostile: what a model endpoint sends back is bounded and
// checked; a broken or hostile stream is an error, never a hang, a panic
// or a half-read turn taken for a whole one. The control is an honest
// stream through the same handler.
func TestModelStreamHostile(t *testing.T) {
	t.Parallel()
	honest := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"done\"}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n"
	cases := []struct {
		name    string
		status  int
		body    string
		wantErr string // "" for the honest control
	}{
		{"honest", 200, honest, ""},
		{"line over the bound", 200, "data: " + strings.Repeat("x", maxEventLine+1) + "\n\n", "token too long"},
		{"not JSON", 200, "data: {nope\n\n", "model stream"},
		{"error event", 200, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}\n\n", "overloaded_error"},
		{"delta for a block never started", 200, "data: {\"type\":\"content_block_delta\",\"index\":7,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n", "not started"},
		{"tool input not JSON", 200, "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"shell\"}}\n\n" +
			"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}\n\n", "not JSON"},
		{"client error, not retried", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"bad model"}}`, "400 Bad Request: bad model"},
		{"error body over the bound", 400, strings.Repeat("y", 4*maxErrorBody), "400 Bad Request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				if c.status != 200 {
					http.Error(w, c.body, c.status)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, c.body)
			}))
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			msg, err := streamAnthropic(ctx, Config{BaseURL: srv.URL, APIKey: "k"}, anthropicRequest{Model: "m"})
			if c.wantErr == "" {
				if err != nil || msg.text() != "done" || msg.stopReason != "end_turn" || msg.inputTokens != 3 || msg.outputTokens != 2 {
					t.Fatalf("control: %+v, %v", msg, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v; want one containing %q", err, c.wantErr)
			}
			if len(err.Error()) > 4096 {
				t.Errorf("error of %d bytes: an endpoint's body is not bounded in it", len(err.Error()))
			}
			if calls.Load() != 1 {
				t.Errorf("%d calls; a client error or a broken stream is not retried", calls.Load())
			}
			var ae *apiError
			if c.status != 200 && !errors.As(err, &ae) {
				t.Errorf("a %d is not an *apiError: %v", c.status, err)
			}
		})
	}
}

// TestBackoff: the endpoint's retry-after headers are honoured when
// sensible, else exponential with jitter and a ceiling.
func TestBackoff(t *testing.T) {
	t.Parallel()
	h := func(k, v string) http.Header { x := http.Header{}; x.Set(k, v); return x }
	cases := []struct {
		name     string
		attempt  int
		header   http.Header
		min, max time.Duration
	}{
		{"retry-after-ms", 0, h("retry-after-ms", "10"), 10 * time.Millisecond, 10 * time.Millisecond},
		{"retry-after seconds", 0, h("retry-after", "2"), 2 * time.Second, 2 * time.Second},
		{"absurd header ignored", 0, h("retry-after", "86400"), 375 * time.Millisecond, 500 * time.Millisecond},
		{"first", 0, nil, 375 * time.Millisecond, 500 * time.Millisecond},
		{"third", 2, nil, 1500 * time.Millisecond, 2 * time.Second},
		{"ceiling", 10, nil, 6 * time.Second, 8 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if d := backoff(c.attempt, c.header); d < c.min || d > c.max {
				t.Errorf("backoff = %v; want within [%v, %v]", d, c.min, c.max)
			}
		})
	}
}
