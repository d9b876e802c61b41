package modelproxy

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/forkbomb/forkbomb/internal/event"
)

// Real-looking keys planted for the tests; each must reach only the
// upstream, never the fork's side or an event.
const (
	realAnthropicKey = "sk-ant-api03-REALKEY-planted-for-the-test-0123456789"
	realOpenAIKey    = "sk-proj-REALKEY-planted-for-the-test-9876543210"
	realOAuthToken   = "sk-ant-oat01-REALTOKEN-planted-for-the-test-000"
)

// upstreamServer records what reached it.
type upstreamServer struct {
	*httptest.Server
	mu      sync.Mutex
	headers []http.Header
	paths   []string
	hits    atomic.Int64
}

func (u *upstreamServer) last() (http.Header, string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.headers) == 0 {
		return nil, ""
	}
	return u.headers[len(u.headers)-1], u.paths[len(u.paths)-1]
}

// newUpstream serves h after recording the request.
func newUpstream(t testing.TB, h http.HandlerFunc) *upstreamServer {
	t.Helper()
	u := &upstreamServer{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		u.mu.Lock()
		u.headers = append(u.headers, r.Header.Clone())
		u.paths = append(u.paths, r.URL.RequestURI())
		u.mu.Unlock()
		if h != nil {
			h(w, r)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"type":"message","usage":{"input_tokens":3,"output_tokens":4}}`)
	}))
	t.Cleanup(u.Close)
	return u
}

// recorder keeps a fork's events.
type recorder struct {
	mu     sync.Mutex
	events []event.Event
}

func (r *recorder) emit(d event.Payload) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event.Event{Data: d})
}

func (r *recorder) all() []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event.Event(nil), r.events...)
}

// count is the number of events of kind k.
func (r *recorder) count(k event.Kind) int {
	n := 0
	for _, e := range r.all() {
		if e.Kind() == k {
			n++
		}
	}
	return n
}

// of returns the payloads of type T the recorder kept.
func of[T event.Payload](r *recorder) []T {
	var out []T
	for _, e := range r.all() {
		if d, ok := e.Data.(T); ok {
			out = append(out, d)
		}
	}
	return out
}

// fields is an event's data as the record holds it, by key.
func fields(d event.Payload) map[string]any {
	var m map[string]any
	b, _ := json.Marshal(d)
	json.Unmarshal(b, &m)
	return m
}

// startProxy starts a proxy and one endpoint with a recorder.
func startProxy(t *testing.T, o Options) (*Proxy, *Endpoint, *recorder) {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	p, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	rec := &recorder{}
	ep, err := p.Fork(1, rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	return p, ep, rec
}

// client talks to an endpoint's socket as the fork's forwarder would.
func client(ep *Endpoint) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy: nil,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", ep.Socket)
			},
			DisableCompression: true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// post sends body to path on the endpoint with extra headers.
func post(t *testing.T, ep *Endpoint, path, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ep.BaseURL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := client(ep).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
