package modelproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
)

// Bounds on one model request.
const (
	maxPathLen     = 512
	requestTimeout = 30 * time.Minute // the whole exchange, stream included
	bodyReadWait   = 2 * time.Minute  // for the fork to send its body
	writeWait      = 2 * time.Minute  // for the fork to take each piece of the answer
)

// ServeHTTP is the endpoint's one listener: CONNECT, absolute-form plain
// http, or a model request in origin form.
func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodConnect:
		e.connect(w, r)
	case !strings.HasPrefix(r.RequestURI, "/"):
		e.plain(w, r)
	default:
		e.model(w, r)
	}
}

// refuse answers a request the proxy will not forward, with a body that
// says why.
func refuse(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Forkbomb-Proxy", "refused")
	w.WriteHeader(status)
	fmt.Fprintf(w, "forkbomb model proxy: %s\n", msg)
}

// overRate applies the fork's rate. Over it, it sets Retry-After and
// returns the message for the 429.
func (e *Endpoint) overRate(w http.ResponseWriter) (string, bool) {
	ok, wait := e.rate.allow(time.Now())
	if ok {
		return "", false
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)+1))
	return fmt.Sprintf("rate limit: at most %d requests a minute per fork; retry after %s", e.p.o.RatePerMinute, wait.Round(time.Second)), true
}

// route picks the upstream for a request path.
func (p *Proxy) route(pth string) *upstream {
	under := func(prefix string) bool { return pth == prefix || strings.HasPrefix(pth, prefix+"/") }
	switch {
	case under("/v1/messages"):
		return p.upstreams[Anthropic]
	case under("/v1/responses"), under("/v1/chat/completions"):
		return p.upstreams[OpenAI]
	case under("/v1/models"):
		if u := p.upstreams[OpenAI]; u != nil {
			return u
		}
		return p.upstreams[Anthropic]
	}
	return nil
}

// model forwards one model request to its upstream with the real
// credential, streaming the answer back and metering its usage.
func (e *Endpoint) model(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	e.begin()
	defer e.end()
	pth := r.URL.Path
	shown := clip(pth, 200)
	refusal := event.ProxyRefusalData{Via: event.ViaProxy, Path: shown}
	deny := func(status int, msg string) {
		refusal.Status, refusal.Reason = status, msg
		e.event(refusal)
		refuse(w, status, msg)
	}
	if msg, over := e.overRate(w); over {
		deny(http.StatusTooManyRequests, msg)
		return
	}
	// One spelling per path: no escapes, dot segments or doubled slashes
	// that an upstream might read differently from the proxy.
	if len(pth) > maxPathLen || r.URL.RawPath != "" || path.Clean(pth) != pth {
		deny(http.StatusBadRequest, "malformed path")
		return
	}
	up := e.p.route(pth)
	if up == nil {
		deny(http.StatusNotFound, "no model upstream for this path (only the model API is reachable)")
		return
	}
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		deny(http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	select {
	case e.slots <- struct{}{}:
		defer func() { <-e.slots }()
	default:
		deny(http.StatusServiceUnavailable, fmt.Sprintf("more than %d model requests at once", maxModelRequests))
		return
	}
	max := e.p.o.MaxRequestBytes
	if r.ContentLength > max {
		deny(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", max))
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(bodyReadWait))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		deny(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", max))
		return
	}
	if err != nil {
		deny(http.StatusBadRequest, "reading the request body failed")
		return
	}
	_ = rc.SetReadDeadline(time.Time{})
	model := modelOf(body)
	asked := model // a refusal from here on names the model asked for
	refusal.Model = &asked

	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	target := *up.base
	target.Path = up.base.Path + pth
	target.RawQuery = r.URL.RawQuery
	out, err := http.NewRequestWithContext(ctx, r.Method, target.String(), bytes.NewReader(body))
	if err != nil {
		deny(http.StatusBadRequest, "malformed request")
		return
	}
	copyRequestHeaders(out.Header, r.Header)
	inject(out.Header, up)
	// Plain bytes from upstream, so the usage can be read as it passes.
	out.Header.Set("Accept-Encoding", "identity")
	out.ContentLength = int64(len(body))

	e.event(event.ProxyRequestData{Via: event.ViaProxy, Path: shown, Model: model})
	resp, err := e.p.transport.RoundTrip(out)
	if err != nil {
		deny(http.StatusBadGateway, "the model upstream could not be reached")
		return
	}
	defer resp.Body.Close()
	// A redirect is refused, not passed back: a model API does not
	// redirect, so one means a misconfigured or subverted upstream, and
	// the fork would only be told where to try next.
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		deny(http.StatusBadGateway, fmt.Sprintf("the model upstream answered %d (a redirect); redirects are not followed", resp.StatusCode))
		return
	}
	copyResponseHeaders(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	m := newMeter(resp.Header.Get("Content-Type"))
	streamBody(rc, w, resp.Body, m)
	m.finish()
	if m.model != "" && model == "" {
		model = m.model
	}
	cost := e.p.cost(model, m.in, m.out)
	e.mu.Lock()
	e.usage.Requests++
	e.usage.TokensIn += m.in
	e.usage.TokensOut += m.out
	e.usage.CostMicroUSD += cost
	e.mu.Unlock()
	e.event(event.ProxyResponseData{Via: event.ViaProxy, Path: shown, Model: model, Status: resp.StatusCode,
		TokensIn: m.in, TokensOut: m.out, CostMicroUSD: cost, MS: time.Since(start).Milliseconds()})
}

// inject sets the upstream's real credential and the account it bills,
// both from the user's configuration only.
func inject(h http.Header, up *upstream) {
	switch {
	case up.Kind == OpenAI:
		h.Set("Authorization", "Bearer "+up.APIKey)
		if up.Organization != "" {
			h.Set("OpenAI-Organization", up.Organization)
		}
		if up.Project != "" {
			h.Set("OpenAI-Project", up.Project)
		}
	case up.APIKey != "":
		h.Set("X-Api-Key", up.APIKey)
	default:
		h.Set("Authorization", "Bearer "+up.OAuthToken)
		// The Messages API takes a subscription's token only with this
		// beta; the agent, holding a placeholder API key, does not send it.
		if !strings.Contains(h.Get("Anthropic-Beta"), "oauth-2025-04-20") {
			h.Add("Anthropic-Beta", "oauth-2025-04-20")
		}
	}
}

// streamBody copies the answer to the fork as it arrives, a flush after
// each read, feeding the meter; each write must be taken within writeWait.
func streamBody(rc *http.ResponseController, w io.Writer, body io.Reader, m *meter) {
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			m.Write(buf[:n])
			_ = rc.SetWriteDeadline(time.Now().Add(writeWait))
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

// modelOf is the "model" of a request body; "" when there is none. The
// body is bounded by MaxRequestBytes already; the name is clipped.
func modelOf(body []byte) string {
	var v struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	return clip(v.Model, 100)
}

// clip bounds a string a fork chose before it goes into an event.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// cost is in micro-dollars; Price is in dollars per million tokens.
func (p *Proxy) cost(model string, in, out int64) int64 {
	if p.o.Price == nil || model == "" {
		return 0
	}
	pin, pout := p.o.Price(model)
	return int64(float64(in)*pin + float64(out)*pout + 0.5)
}
