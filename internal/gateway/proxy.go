package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
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

// usage is what an upstream reported it used.
type usage struct {
	In, Out int64
	Seen    bool
}

// protocol is what differs between the two model APIs.
type protocol struct {
	name     string
	upstream func(*Gateway) Upstream
	path     string
	prepare  func(req map[string]json.RawMessage, stream bool)
	auth     func(h http.Header, key string, client http.Header)
	// line reads usage from one SSE data line or a whole JSON body.
	usage func(data []byte, u *usage)
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
			Usage *struct {
				Prompt     int64 `json:"prompt_tokens"`
				Completion int64 `json:"completion_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal(data, &m) == nil && m.Usage != nil {
			u.Seen, u.In, u.Out = true, m.Usage.Prompt, m.Usage.Completion
		}
	},
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
	rid, err := g.Reserve(r.Context(), ws, model, tag, worst)
	if errors.Is(err, ErrInsufficient) {
		writeErr(w, http.StatusPaymentRequired, "insufficient_balance", "the balance does not cover this request's worst case")
		return
	}
	if err != nil {
		g.internal(w, r, err)
		return
	}
	u, ferr := g.forward(r.Context(), w, r, p, up, out, stream)
	// Settle even when the client went away: the work upstream was done.
	cost := worst
	if u.Seen {
		cost = price.cost(u.In, u.Out)
	} else if ferr != nil {
		cost = 0 // nothing reached the model, or it refused
	}
	if _, err := g.Settle(context.WithoutCancel(r.Context()), rid, cost, u.In, u.Out); err != nil {
		g.log.Printf("settle %s: %v (the sweeper returns it)", rid, err)
	}
}

// forward sends the call upstream and copies the answer back, reading
// usage on the way. An upstream error becomes a fixed error: its text may
// name the upstream, its account, or its key's prefix.
func (g *Gateway) forward(ctx context.Context, w http.ResponseWriter, r *http.Request, p protocol, up Upstream, body []byte, stream bool) (usage, error) {
	var u usage
	ureq, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(up.URL, "/")+p.path, bytes.NewReader(body))
	if err != nil {
		writeErr(w, http.StatusBadGateway, "upstream_error", "the model provider could not be reached")
		return u, fmt.Errorf("forward: %w", err)
	}
	ureq.Header.Set("Content-Type", "application/json")
	p.auth(ureq.Header, up.Key, r.Header)
	resp, err := g.client.Do(ureq)
	if err != nil {
		g.log.Printf("forward %s: upstream unreachable", p.name) // err names the upstream URL
		writeErr(w, http.StatusBadGateway, "upstream_error", "the model provider could not be reached")
		return u, fmt.Errorf("forward: upstream unreachable")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		status, code := http.StatusBadGateway, "upstream_error"
		switch {
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == 529:
			status, code = http.StatusServiceUnavailable, "overloaded"
		case resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusRequestEntityTooLarge:
			status, code = http.StatusBadRequest, "invalid_request_error"
		}
		writeErr(w, status, code, fmt.Sprintf("the model provider refused the request (status %d)", resp.StatusCode))
		return u, fmt.Errorf("forward: upstream status %d", resp.StatusCode)
	}
	ct := resp.Header.Get("Content-Type")
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if !stream || !strings.HasPrefix(ct, "text/event-stream") {
		data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		p.usage(data, &u)
		w.Write(data)
		return u, err
	}
	fl, _ := w.(http.Flusher)
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				p.usage(bytes.TrimSpace(d), &u)
			}
			if _, werr := w.Write(line); werr != nil {
				// The client left; read on for the usage the upstream
				// will report, so the charge is what was used.
				io.Copy(usageSink{p, &u}, io.LimitReader(br, 64<<20))
				return u, werr
			}
			if line[len(line)-1] == '\n' && fl != nil && len(bytes.TrimSpace(line)) == 0 {
				fl.Flush()
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // a line longer than the buffer: written in pieces
		}
		if err != nil {
			if fl != nil {
				fl.Flush()
			}
			if errors.Is(err, io.EOF) {
				return u, nil
			}
			return u, err
		}
	}
}

// usageSink reads usage from the rest of a stream no one listens to.
type usageSink struct {
	p protocol
	u *usage
}

func (s usageSink) Write(b []byte) (int, error) {
	for _, line := range bytes.Split(b, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			s.p.usage(bytes.TrimSpace(d), s.u)
		}
	}
	return len(b), nil
}
