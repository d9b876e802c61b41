package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"
)

// Price is a model's price in micro-dollars per million tokens (so
// $3 per million is 3_000_000): integers, no floats in money paths.
type Price struct {
	In, Out int64
}

// cost is the price of in and out tokens in micro-dollars, rounded up.
func (p Price) cost(in, out int64) int64 {
	n := in*p.In + out*p.Out
	return (n + 999_999) / 1_000_000
}

const maxRequestBody = 8 << 20

// usage is what an upstream reported it used. Final is the report a
// call is charged by: Anthropic's message_delta (its output count is
// cumulative and nothing is reported after it), OpenAI's usage-only last
// chunk, or a whole body's usage. Anything less — message_start's input
// alone, a stream cut before its last chunk — is not the bill.
type usage struct {
	In, Out int64
	Seen    bool
	Final   bool
}

// protocol is what differs between the two model APIs.
type protocol struct {
	name     string
	upstream func(*Gateway) Upstream
	path     string
	prepare  func(req map[string]json.RawMessage, stream bool)
	auth     func(h http.Header, key string, client http.Header)
	// usage reads usage from one SSE data line or a whole JSON body.
	usage func(data []byte, u *usage)
	// endIsFinal: the last usage of a stream that ended cleanly is the
	// whole (an OpenAI-compatible server may repeat usage in every chunk).
	endIsFinal bool
}

var anthropicProto = protocol{
	name:     "anthropic",
	upstream: func(g *Gateway) Upstream { return g.opts.Anthropic },
	path:     "/v1/messages",
	prepare:  func(map[string]json.RawMessage, bool) {},
	auth: func(h http.Header, key string, client http.Header) {
		h.Set("x-api-key", key)
		v := client.Get("anthropic-version")
		if v == "" {
			v = "2023-06-01"
		}
		h.Set("anthropic-version", v)
	},
	usage: func(data []byte, u *usage) {
		var m struct {
			Type    string `json:"type"`
			Usage   *anthropicUsage
			Message struct{ Usage *anthropicUsage } `json:"message"`
		}
		if json.Unmarshal(data, &m) != nil {
			return
		}
		if m.Usage != nil && (m.Type == "message_delta" || m.Type == "message") {
			u.Final = true
		}
		for _, x := range []*anthropicUsage{m.Message.Usage, m.Usage} {
			if x == nil {
				continue
			}
			u.Seen = true
			if in := x.Input + x.CacheCreation + x.CacheRead; in > 0 {
				u.In = in
			}
			if x.Output > 0 {
				u.Out = x.Output // message_delta's count is cumulative
			}
		}
	},
}

type anthropicUsage struct {
	Input         int64 `json:"input_tokens"`
	Output        int64 `json:"output_tokens"`
	CacheCreation int64 `json:"cache_creation_input_tokens"`
	CacheRead     int64 `json:"cache_read_input_tokens"`
}

var openaiProto = protocol{
	name:     "openai",
	upstream: func(g *Gateway) Upstream { return g.opts.OpenAI },
	path:     "/chat/completions",
	prepare: func(req map[string]json.RawMessage, stream bool) {
		// A stream reports usage only when asked: without it nothing
		// could be settled but the worst case.
		if stream {
			req["stream_options"] = json.RawMessage(`{"include_usage":true}`)
		}
		delete(req, "max_completion_tokens")
	},
	auth: func(h http.Header, key string, _ http.Header) { h.Set("Authorization", "Bearer "+key) },
	usage: func(data []byte, u *usage) {
		var m struct {
			Choices []json.RawMessage `json:"choices"`
			Usage   *struct {
				Prompt     int64 `json:"prompt_tokens"`
				Completion int64 `json:"completion_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal(data, &m) == nil && m.Usage != nil {
			u.Seen, u.In, u.Out = true, m.Usage.Prompt, m.Usage.Completion
			// include_usage's last chunk has no choices (a whole body's
			// usage is final as well: forward says so).
			if len(m.Choices) == 0 {
				u.Final = true
			}
		}
	},
	endIsFinal: true,
}

func (g *Gateway) anthropicMessages(w http.ResponseWriter, r *http.Request) {
	g.proxy(w, r, anthropicProto)
}
func (g *Gateway) chatCompletions(w http.ResponseWriter, r *http.Request) {
	g.proxy(w, r, openaiProto)
}

func (g *Gateway) price(model string) (Price, bool) {
	if p, ok := g.opts.Prices[model]; ok {
		return p, true
	}
	p, ok := g.opts.Prices["*"]
	return p, ok
}

// proxy meters one model call: reserve the worst case, forward, settle
// from the usage the upstream reported, return the rest.
func (g *Gateway) proxy(w http.ResponseWriter, r *http.Request, p protocol) {
	ws := workspaceOf(r)
	if !g.limits.allow("model", ws) {
		writeErr(w, http.StatusTooManyRequests, "rate_limited", "too many requests")
		return
	}
	tag, ok := tagOf(r)
	if !ok {
		writeErr(w, http.StatusBadRequest, "invalid_tag", "the "+TagHeader+" header is 1 to 64 of A-Z a-z 0-9 . _ - /")
		return
	}
	up := p.upstream(g)
	if up.URL == "" {
		writeErr(w, http.StatusServiceUnavailable, "not_configured", "this model protocol is not offered here")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	if err != nil || len(body) > maxRequestBody {
		writeErr(w, http.StatusBadRequest, "invalid_request_error", "request body unreadable or too large")
		return
	}
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil {
		writeErr(w, http.StatusBadRequest, "invalid_request_error", "request body is not a JSON object")
		return
	}
	var model string
	var stream bool
	json.Unmarshal(req["model"], &model)
	json.Unmarshal(req["stream"], &stream)
	price, ok := g.price(model)
	if !ok {
		writeErr(w, http.StatusBadRequest, "unknown_model", "this model is not offered here")
		return
	}
	maxTok := g.opts.MaxTokensClamp
	var asked int64
	if json.Unmarshal(req["max_tokens"], &asked) == nil && asked > 0 && asked < maxTok {
		maxTok = asked
	}
	if asked == 0 {
		json.Unmarshal(req["max_completion_tokens"], &asked)
		if asked > 0 && asked < maxTok {
			maxTok = asked
		}
	}
	req["max_tokens"], _ = json.Marshal(maxTok)
	p.prepare(req, stream)
	out, _ := json.Marshal(req)
	// A token is never shorter than a byte of UTF-8 on the wire... nearly:
	// bytes/2 bounds any tokenizer's count of a JSON body generously.
	worst := price.cost(int64(len(out))/2+1, maxTok)
	if !g.calls.begin() {
		writeErr(w, http.StatusServiceUnavailable, "shutting_down", "the server is stopping")
		return
	}
	defer g.calls.end()
	// The exchange must end, and settle, before the sweeper may return
	// the reservation in full: its deadline comes from the reservation's
	// start (New keeps UpstreamTimeout under ReservationTTL).
	deadline := time.Now().Add(g.opts.UpstreamTimeout)
	rid, err := g.Reserve(r.Context(), ws, model, tag, worst)
	if errors.Is(err, ErrInsufficient) {
		writeErr(w, http.StatusPaymentRequired, "insufficient_balance", "the balance does not cover this request's worst case")
		return
	}
	if err != nil {
		g.internal(w, r, err)
		return
	}
	u, reached := g.forward(w, r, p, up, out, stream, deadline)
	// Settle even when the client went away: the work upstream was done.
	// Without the final usage (the upstream cut, the deadline passed,
	// the usage was malformed or past what is read) the charge is the
	// worst case, never what was seen so far: input alone, or 0, would
	// make a hang-up before the last chunk a free stream.
	cost := worst
	switch {
	case !reached:
		cost = 0 // nothing reached the model, or it refused
	case u.Final:
		cost = price.cost(u.In, u.Out)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), settleTimeout)
	defer cancel()
	if _, err := g.Settle(sctx, rid, cost, u.In, u.Out); err != nil {
		g.log.Printf("settle %s: %v (the sweeper returns it)", rid, err)
	}
}
