package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"time"
)

// Upstream is a model provider the proxy forwards to. Its URL and key
// never leave the server.
type Upstream struct {
	URL string
	Key string
}

// Options configure a Gateway.
type Options struct {
	Secrets   Secrets
	Anthropic Upstream // POST /v1/messages
	OpenAI    Upstream // POST /v1/chat/completions
	// Prices by model; "*" prices any other model. A model with no
	// price is refused.
	Prices map[string]Price
	// MaxTokensClamp is the max_tokens of a request that asks for none or
	// for more (default 8192): the reservation needs a worst case.
	MaxTokensClamp int64
	ReservationTTL time.Duration // default 10 minutes
	// UpstreamTimeout bounds one model call's upstream exchange, the
	// read on for its usage after a client left included (default, and
	// at most, 9/10 of ReservationTTL: the call settles before the
	// sweeper may return its reservation in full).
	UpstreamTimeout time.Duration
	SweepEvery      time.Duration // default 30 seconds
	Limits          Limits
	// TrustedProxies are the peers whose X-Forwarded-For is believed.
	TrustedProxies []*net.IPNet
	Burns          BurnOptions
	Log            *log.Logger // nil: discarded
	HTTPClient     *http.Client
}

// Gateway is the hosted side's state and handlers.
type Gateway struct {
	db      *DB
	opts    Options
	secrets Secrets
	limits  *limiter
	ipKey   []byte
	log     *log.Logger
	client  *http.Client
	calls   *calls
}

// New makes a gateway over db.
func New(db *DB, o Options) (*Gateway, error) {
	if len(o.Secrets) == 0 {
		return nil, fmt.Errorf("new gateway: %w: none", ErrBadSecret)
	}
	if o.MaxTokensClamp <= 0 {
		o.MaxTokensClamp = 8192
	}
	if o.ReservationTTL <= 0 {
		o.ReservationTTL = 10 * time.Minute
	}
	if limit := o.ReservationTTL * 9 / 10; o.UpstreamTimeout <= 0 || o.UpstreamTimeout > limit {
		o.UpstreamTimeout = limit
	}
	if o.SweepEvery <= 0 {
		o.SweepEvery = 30 * time.Second
	}
	o.Limits.defaults()
	lg := o.Log
	if lg == nil {
		lg = log.New(io.Discard, "", 0)
	}
	cl := o.HTTPClient
	if cl == nil {
		// No redirects: a redirect could carry the upstream key elsewhere.
		cl = &http.Client{Timeout: 10 * time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("redirects are not followed")
		}}
	}
	return &Gateway{db: db, opts: o, secrets: o.Secrets, limits: newLimiter(o.Limits),
		ipKey: randBytes(32), log: lg, client: cl, calls: newCalls()}, nil
}

// Handler routes the gateway's API. Every response that is not a model's
// own answer is JSON written by writeErr or writeJSON.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/workspaces", g.createWorkspace)
	mux.HandleFunc("GET /v1/balance", g.authed(g.balance))
	mux.HandleFunc("GET /v1/usage", g.authed(g.usage))
	mux.HandleFunc("POST /v1/burns", g.authedOrNot(g.postBurn))
	mux.HandleFunc("GET /v1/burns", g.publicBurns)
	mux.HandleFunc("POST /v1/messages", g.authed(g.anthropicMessages))
	mux.HandleFunc("POST /v1/chat/completions", g.authed(g.chatCompletions))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, http.StatusNotFound, "not_found", "no such endpoint")
	})
	return g.recoverer(mux)
}

// Serve runs the sweeper and serves on ln until ctx ends. Calls in
// flight get 10 seconds to finish; then their upstream exchanges and
// connections are ended (each is charged its worst case), and Serve
// returns once every one has settled, so the database can close. A
// gateway that has stopped serving takes no more model calls.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: g.Handler(), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)}
	go g.sweepLoop(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		g.calls.halt()
		srv.Close()
		wctx, cancel2 := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
		defer cancel2()
		if err := g.calls.wait(wctx); err != nil {
			g.log.Printf("stop: %v (the sweeper returns them)", err)
		}
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	<-stopped
	return nil
}

func (g *Gateway) sweepLoop(ctx context.Context) {
	t := time.NewTicker(g.opts.SweepEvery)
	defer t.Stop()
	for {
		if n, err := g.Sweep(ctx); err != nil && ctx.Err() == nil {
			g.log.Printf("sweep: %v", err)
		} else if n > 0 {
			g.log.Printf("sweep: returned %d expired reservations", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// recoverer turns a panic into a fixed 500: no stack trace reaches a
// client.
func (g *Gateway) recoverer(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				g.log.Printf("panic serving %s %s: %v", r.Method, r.URL.Path, v)
				writeErr(w, http.StatusInternalServerError, "internal", "internal error")
			}
		}()
		h.ServeHTTP(w, r)
	})
}

type errBody struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// writeErr is the only way an error reaches a client: a reason code and a
// fixed message chosen here, never an error's text.
func writeErr(w http.ResponseWriter, status int, code, msg string) {
	var b errBody
	b.Type, b.Error.Type, b.Error.Message = "error", code, msg
	writeJSON(w, status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// internal logs err (never a request's headers) and answers a fixed 500.
func (g *Gateway) internal(w http.ResponseWriter, r *http.Request, err error) {
	g.log.Printf("%s %s: %v", r.Method, r.URL.Path, err)
	writeErr(w, http.StatusInternalServerError, "internal", "internal error")
}

// presentedKey is the key a request carries: Authorization: Bearer (what
// forkbomb's hosted engine sends), or x-api-key for Anthropic clients.
func presentedKey(r *http.Request) string {
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return strings.TrimSpace(r.Header.Get("x-api-key"))
}

type wsKey struct{}

func (g *Gateway) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ws, err := g.Authenticate(r.Context(), presentedKey(r))
		if errors.Is(err, ErrNotFound) {
			writeErr(w, http.StatusUnauthorized, "authentication_error", "invalid API key")
			return
		}
		if err != nil {
			g.internal(w, r, err)
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), wsKey{}, ws)))
	}
}

// authedOrNot passes the workspace when a valid key came, and nothing
// otherwise: a burn names its workspace in its memo, and a wrong key is
// still refused.
func (g *Gateway) authedOrNot(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if presentedKey(r) == "" {
			h(w, r)
			return
		}
		g.authed(h)(w, r)
	}
}

func workspaceOf(r *http.Request) string {
	ws, _ := r.Context().Value(wsKey{}).(string)
	return ws
}

func (g *Gateway) createWorkspace(w http.ResponseWriter, r *http.Request) {
	if !g.limits.allow("create", g.clientKey(r)) {
		writeErr(w, http.StatusTooManyRequests, "rate_limited", "too many requests")
		return
	}
	id, key, err := g.CreateWorkspace(r.Context())
	if err != nil {
		g.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]string{"workspace_id": id, "api_key": key})
}

func (g *Gateway) balance(w http.ResponseWriter, r *http.Request) {
	b, err := g.Balance(r.Context(), workspaceOf(r))
	if err != nil {
		g.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"workspace_id": workspaceOf(r), "balance_micro_usd": b})
}

func (g *Gateway) usage(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Has("tag") {
		tag := r.URL.Query().Get("tag")
		if !ValidTag(tag) {
			writeErr(w, http.StatusBadRequest, "invalid_tag", "a tag is 1 to 64 of A-Z a-z 0-9 . _ - /")
			return
		}
		u, err := g.TagTotal(r.Context(), workspaceOf(r), tag)
		if err != nil {
			g.internal(w, r, err)
			return
		}
		b, err := g.Balance(r.Context(), workspaceOf(r))
		if err != nil {
			g.internal(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, struct {
			TagUsage
			Balance int64 `json:"balance_micro_usd"`
		}{u, b})
		return
	}
	u, err := g.Usage(r.Context(), workspaceOf(r), 200)
	if err != nil {
		g.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": u})
}
