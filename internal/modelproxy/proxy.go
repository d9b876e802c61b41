package modelproxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// Upstream is a model API the proxy forwards to, with the real credential
// the forks never see.
type Upstream struct {
	Kind       string // "anthropic" or "openai"
	BaseURL    string // e.g. https://api.anthropic.com or the user's ANTHROPIC_BASE_URL/OPENAI_BASE_URL; plain http only to a loopback host
	APIKey     string // anthropic: x-api-key; openai: Authorization: Bearer
	OAuthToken string // anthropic only, a Claude subscription's CLAUDE_CODE_OAUTH_TOKEN: Authorization: Bearer
	// The account the key bills, as the user configured it (openai only:
	// OPENAI_ORG_ID and OPENAI_PROJECT_ID in forkbomb's environment, as
	// the OpenAI SDKs read them); sent as OpenAI-Organization and
	// OpenAI-Project. "" sends none: the key's default. A fork's own
	// headers of that kind never pass (accountHeader).
	Organization string
	Project      string
}

// The upstream kinds.
const (
	Anthropic = "anthropic"
	OpenAI    = "openai"
)

// Options configure a Proxy.
type Options struct {
	// Upstreams: at most one per Kind; the request path picks it
	// (/v1/messages… → anthropic; /v1/responses…, /v1/chat/completions,
	// /v1/models… → openai, or anthropic when only it is configured).
	Upstreams []Upstream
	// Allow holds the hosts (host or host:port, default port 443) a fork
	// may reach by HTTP CONNECT (or plain-http proxying); empty: none.
	Allow           []string
	MaxRequestBytes int64                                              // default 32 MiB
	RatePerMinute   int                                                // requests per fork per minute (a token bucket: bursts of that many); default 600
	Price           func(model string) (inPerMTok, outPerMTok float64) // USD per million tokens; nil: cost 0
	Dir             string                                             // parent for the private 0700 socket folders; "": os.TempDir()
	Transport       http.RoundTripper                                  // nil: a transport that ignores proxy env vars
}

// Proxy is one run's model proxy; Fork opens an endpoint per fork.
type Proxy struct {
	o         Options
	upstreams map[string]*upstream
	allow     map[string]bool
	transport http.RoundTripper
	// plainTransport serves absolute-form proxying to allowed hosts; it
	// dials like CONNECT does (dialAllowed).
	plainTransport *http.Transport
	lookup         func(ctx context.Context, host string) ([]net.IPAddr, error) // DNS, for the allowed names

	mu     sync.Mutex
	eps    map[*Endpoint]bool
	closed bool
}

// upstream is a checked Upstream.
type upstream struct {
	Upstream
	base *url.URL // path without a trailing "/v1" or "/"
}

const (
	defaultMaxRequest = 32 << 20
	defaultRate       = 600
	// Port is the port every fork reaches its endpoint on, on the fork's
	// own loopback (each fork has its own network namespace, so one
	// constant serves all).
	Port = 8119
)

// Start checks o and returns a proxy with no endpoints yet.
func Start(o Options) (*Proxy, error) {
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = defaultMaxRequest
	}
	if o.RatePerMinute <= 0 {
		o.RatePerMinute = defaultRate
	}
	if o.Dir == "" {
		o.Dir = os.TempDir()
	}
	p := &Proxy{o: o, upstreams: map[string]*upstream{}, allow: map[string]bool{}, eps: map[*Endpoint]bool{}}
	for _, u := range o.Upstreams {
		c, err := checkUpstream(u)
		if err != nil {
			return nil, err
		}
		if p.upstreams[u.Kind] != nil {
			return nil, fmt.Errorf("%w: two %s upstreams", ErrUpstream, u.Kind)
		}
		p.upstreams[u.Kind] = c
	}
	for _, h := range o.Allow {
		c, err := CanonicalHostPort(h, 443)
		if err != nil {
			return nil, err
		}
		p.allow[c] = true
	}
	p.transport = o.Transport
	if p.transport == nil {
		p.transport = newTransport()
	}
	p.plainTransport = newTransport()
	p.lookup = net.DefaultResolver.LookupIPAddr
	p.plainTransport.DialContext = p.dialAllowed
	p.plainTransport.ForceAttemptHTTP2 = false
	return p, nil
}

// checkUpstream refuses what could send a real credential somewhere the
// user did not mean: a URL with user info, a scheme but https, plain http
// off loopback (anyone on the path would read the key), a query or
// fragment (the proxy appends the fork's path).
func checkUpstream(u Upstream) (*upstream, error) {
	if u.Kind != Anthropic && u.Kind != OpenAI {
		return nil, fmt.Errorf("%w: kind %q is not %s or %s", ErrUpstream, u.Kind, Anthropic, OpenAI)
	}
	if u.OAuthToken != "" && u.Kind != Anthropic {
		return nil, fmt.Errorf("%w: an OAuth token is for the anthropic upstream only", ErrUpstream)
	}
	if (u.Organization != "" || u.Project != "") && u.Kind != OpenAI {
		return nil, fmt.Errorf("%w: an organization or project is for the openai upstream only", ErrUpstream)
	}
	for _, v := range []string{u.Organization, u.Project} {
		if strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return nil, fmt.Errorf("%w: %s: an organization or project id with a space or control character", ErrUpstream, u.Kind)
		}
	}
	if u.APIKey == "" && u.OAuthToken == "" {
		return nil, fmt.Errorf("%w: %s: no credential", ErrUpstream, u.Kind)
	}
	b, err := url.Parse(u.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %s base URL: %w", ErrUpstream, u.Kind, err)
	}
	if b.User != nil {
		return nil, fmt.Errorf("%w: %s base URL %s: URLs with credentials are refused", ErrUpstream, u.Kind, b.Redacted())
	}
	if b.Host == "" || b.RawQuery != "" || b.Fragment != "" || b.Opaque != "" {
		return nil, fmt.Errorf("%w: %s base URL %s: want scheme://host[:port][/path]", ErrUpstream, u.Kind, b.Redacted())
	}
	switch b.Scheme {
	case "https":
	case "http":
		ip := net.ParseIP(b.Hostname())
		if b.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("%w: %s base URL %s: plain http only to loopback", ErrUpstream, u.Kind, b.Redacted())
		}
	default:
		return nil, fmt.Errorf("%w: %s base URL %s: scheme must be https (or http on loopback)", ErrUpstream, u.Kind, b.Redacted())
	}
	// Forks ask for /v1/...; a base URL given with its /v1 (as
	// OPENAI_BASE_URL usually is) must not make it /v1/v1.
	b.Path = strings.TrimSuffix(strings.TrimSuffix(b.Path, "/"), "/v1")
	b.RawPath = ""
	return &upstream{Upstream: u, base: b}, nil
}

// newTransport is the upstream transport: no proxy from the environment
// (a fork's requests must go where the proxy decides), bounded dials,
// handshakes and response headers. It never follows redirects: only
// http.Client does, and the proxy calls RoundTrip.
func newTransport() *http.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    15 * time.Second,
		ResponseHeaderTimeout:  10 * time.Minute, // a non-streaming answer may think for minutes
		MaxResponseHeaderBytes: 1 << 20,
		IdleConnTimeout:        90 * time.Second,
		MaxIdleConnsPerHost:    8,
		ForceAttemptHTTP2:      true,
	}
}

// closeTimeout bounds how long Close waits for requests in flight.
const closeTimeout = 5 * time.Second

// Close closes every endpoint, waiting at most a few seconds for requests
// in flight, then cutting them.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	eps := make([]*Endpoint, 0, len(p.eps))
	for e := range p.eps {
		eps = append(eps, e)
	}
	p.mu.Unlock()
	// At once, so that the wait is one closeTimeout, not one per fork.
	errs := make([]error, len(eps))
	var wg sync.WaitGroup
	for i, e := range eps {
		wg.Go(func() { errs[i] = e.Close() })
	}
	wg.Wait()
	if t, ok := p.transport.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
	p.plainTransport.CloseIdleConnections()
	return errors.Join(errs...)
}

// shutdown stops srv, waiting at most closeTimeout for its requests.
func shutdown(srv *http.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		return srv.Close()
	}
	return nil
}
