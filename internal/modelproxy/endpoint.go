package modelproxy

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// Endpoint is one fork's way to the proxy.
type Endpoint struct {
	Socket      string // host path of the UNIX socket
	Port        int    // the port the fork uses on its own 127.0.0.1
	Placeholder string // the fake key the fork holds; requests may carry it, it is stripped

	p    *Proxy
	n    int
	dir  string
	srv  *http.Server
	emit func(event.Payload)
	rate *rateLimit
	// slots bound the model requests in flight: each may hold a body of
	// up to MaxRequestBytes in memory.
	slots chan struct{}

	mu       sync.Mutex
	usage    Usage
	inflight int           // model requests not yet counted
	idle     chan struct{} // closed while inflight is 0
	tunnels  map[net.Conn]bool
	closed   bool
	once     sync.Once
	err      error
}

// Usage is what one fork's requests cost, as the upstream reported it.
type Usage struct {
	Requests     int
	TokensIn     int64
	TokensOut    int64
	CostMicroUSD int64
}

// Server limits on what a fork sends before the handler runs.
const (
	maxHeaderBytes    = 64 << 10
	readHeaderTimeout = 30 * time.Second
	idleTimeout       = 2 * time.Minute
	maxModelRequests  = 16 // per fork at once
)

// Fork opens an endpoint for fork n: a UNIX socket in a 0700 folder of its
// own under Options.Dir (the sandbox hides that folder from the fork and
// bridges the socket to 127.0.0.1:Port inside it). emit gets this fork's
// events and may be nil; it is never called with a credential, a body, or
// the query of a request.
func (p *Proxy) Fork(n int, emit func(event.Payload)) (*Endpoint, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	dir, err := os.MkdirTemp(p.o.Dir, "forkbomb-proxy-"+strconv.Itoa(n)+"-")
	if err != nil {
		return nil, fmt.Errorf("model proxy folder: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("model proxy folder: %w", err)
	}
	sock := filepath.Join(dir, "proxy.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("model proxy socket: %w", err)
	}
	e := &Endpoint{
		Socket: sock, Port: Port, Placeholder: sandbox.NewPlaceholder(),
		p: p, n: n, dir: dir, emit: emit,
		rate:    newRateLimit(p.o.RatePerMinute, time.Minute),
		tunnels: map[net.Conn]bool{},
		idle:    make(chan struct{}),
		slots:   make(chan struct{}, maxModelRequests),
	}
	close(e.idle)
	var emitMu sync.Mutex
	if emit != nil {
		// Handlers run concurrently; the sink sees one event at a time.
		e.emit = func(d event.Payload) {
			emitMu.Lock()
			defer emitMu.Unlock()
			emit(d)
		}
	}
	e.srv = &http.Server{
		Handler:           e,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          discardLog,
	}
	go func() { _ = e.srv.Serve(ln) }()
	p.eps[e] = true
	return e, nil
}

// BaseURL is the endpoint as the fork sees it.
func (e *Endpoint) BaseURL() string { return "http://127.0.0.1:" + strconv.Itoa(e.Port) }

// ProxyURL is the endpoint as HTTPS_PROXY/HTTP_PROXY: the same listener
// serves CONNECT.
func (e *Endpoint) ProxyURL() string { return e.BaseURL() }

// Env is the environment a fork's agent of that kind needs (NAME=VALUE):
// the base URL and the placeholder key for the kind ("" for none), and the
// proxy variables when hosts are allowed. The key variables must reach the
// sandbox as sandbox.Policy.Placeholders.
func (e *Endpoint) Env(kind string) []string {
	var env []string
	switch kind {
	case Anthropic:
		env = append(env, "ANTHROPIC_BASE_URL="+e.BaseURL(), "ANTHROPIC_API_KEY="+e.Placeholder)
	case OpenAI:
		env = append(env, "OPENAI_BASE_URL="+e.BaseURL()+"/v1", "OPENAI_API_KEY="+e.Placeholder)
	}
	if len(e.p.allow) > 0 {
		for _, name := range []string{"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"} {
			env = append(env, name+"="+e.ProxyURL())
		}
		env = append(env, "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost")
	}
	return env
}

// usageWait bounds how long Usage waits for requests in flight.
const usageWait = 5 * time.Second

// Usage is this fork's usage. A request is counted once its answer has
// passed whole, which is just after the fork has read it; so Usage first
// waits (at most a few seconds) for requests in flight, and called after
// the fork's agent has ended it includes every answer the agent saw.
func (e *Endpoint) Usage() Usage {
	e.mu.Lock()
	idle := e.idle
	e.mu.Unlock()
	t := time.NewTimer(usageWait)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.usage
}

// begin and end bracket a model request for Usage.
func (e *Endpoint) begin() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.inflight == 0 {
		e.idle = make(chan struct{})
	}
	e.inflight++
}

func (e *Endpoint) end() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.inflight--
	if e.inflight == 0 {
		close(e.idle)
	}
}

// Close stops the endpoint: no new connections, requests in flight get a
// few seconds, tunnels are cut, the socket's folder is removed.
func (e *Endpoint) Close() error {
	e.once.Do(func() {
		err := shutdown(e.srv)
		e.mu.Lock()
		e.closed = true
		for c := range e.tunnels {
			c.Close()
		}
		e.mu.Unlock()
		if rerr := os.RemoveAll(e.dir); rerr != nil {
			err = errors.Join(err, rerr)
		}
		e.p.mu.Lock()
		delete(e.p.eps, e)
		e.p.mu.Unlock()
		if err != nil {
			e.err = fmt.Errorf("close model proxy endpoint %d: %w", e.n, err)
		}
	})
	return e.err
}

// event sends one event if anyone listens.
func (e *Endpoint) event(d event.Payload) {
	if e.emit != nil {
		e.emit(d)
	}
}

// track registers a tunnel's connection so Close can cut it; false when
// the endpoint is closed already.
func (e *Endpoint) track(c net.Conn, on bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if on {
		if e.closed {
			return false
		}
		e.tunnels[c] = true
	} else {
		delete(e.tunnels, c)
	}
	return true
}

// rateLimit is a token bucket: bursts of up to n, then n per window.
// Its size does not grow with n (a ring of n times would: a generous rate
// must not cost memory).
type rateLimit struct {
	mu     sync.Mutex
	n      float64
	window time.Duration
	tokens float64
	last   time.Time
}

func newRateLimit(n int, window time.Duration) *rateLimit {
	return &rateLimit{n: float64(n), window: window, tokens: float64(n)}
}

// allow admits one event now, or says how long until one would be.
func (r *rateLimit) allow(now time.Time) (bool, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.last.IsZero() && now.After(r.last) {
		r.tokens = min(r.n, r.tokens+now.Sub(r.last).Seconds()*r.n/r.window.Seconds())
	}
	r.last = now
	if r.tokens >= 1 {
		r.tokens--
		return true, 0
	}
	return false, time.Duration((1 - r.tokens) * float64(r.window) / r.n)
}
