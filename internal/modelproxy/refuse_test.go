package modelproxy

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
)

// TestStartRefusesUpstream: a credential is never sent in the clear off
// this machine, nor to a URL that carries its own, nor to an unknown kind.
// The control: https anywhere and http to loopback start.
func TestStartRefusesUpstream(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		up   Upstream
		ok   bool
	}{
		{"https", Upstream{Kind: Anthropic, BaseURL: "https://api.anthropic.com", APIKey: realAnthropicKey}, true},
		{"http loopback", Upstream{Kind: OpenAI, BaseURL: "http://127.0.0.1:9/v1", APIKey: realOpenAIKey}, true},
		{"http localhost", Upstream{Kind: OpenAI, BaseURL: "http://localhost:9", APIKey: realOpenAIKey}, true},
		{"http ipv6 loopback", Upstream{Kind: OpenAI, BaseURL: "http://[::1]:9", APIKey: realOpenAIKey}, true},
		{"http remote", Upstream{Kind: Anthropic, BaseURL: "http://api.anthropic.com", APIKey: realAnthropicKey}, false},
		{"http private address", Upstream{Kind: Anthropic, BaseURL: "http://10.0.0.1:8080", APIKey: realAnthropicKey}, false},
		{"http loopback-looking name", Upstream{Kind: Anthropic, BaseURL: "http://127.0.0.1.evil.example", APIKey: realAnthropicKey}, false},
		{"user info", Upstream{Kind: Anthropic, BaseURL: "https://u:p@api.anthropic.com", APIKey: realAnthropicKey}, false},
		{"query", Upstream{Kind: Anthropic, BaseURL: "https://api.anthropic.com?x=1", APIKey: realAnthropicKey}, false},
		{"ftp", Upstream{Kind: Anthropic, BaseURL: "ftp://api.anthropic.com", APIKey: realAnthropicKey}, false},
		{"no key", Upstream{Kind: Anthropic, BaseURL: "https://api.anthropic.com"}, false},
		{"oauth for openai", Upstream{Kind: OpenAI, BaseURL: "https://api.openai.com", OAuthToken: realOAuthToken}, false},
		{"unknown kind", Upstream{Kind: "gemini", BaseURL: "https://x.example", APIKey: realOpenAIKey}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := Start(Options{Upstreams: []Upstream{c.up}, Dir: t.TempDir()})
			if c.ok {
				if err != nil {
					t.Fatalf("control: refused: %v", err)
				}
				p.Close()
				return
			}
			if !errors.Is(err, ErrUpstream) {
				t.Fatalf("err %v, want ErrUpstream", err)
			}
			for _, k := range []string{realAnthropicKey, realOpenAIKey, realOAuthToken} {
				if strings.Contains(err.Error(), k) {
					t.Errorf("LEAK: the error names the key: %v", err)
				}
			}
		})
	}
	t.Run("two of a kind", func(t *testing.T) {
		t.Parallel()
		u := Upstream{Kind: Anthropic, BaseURL: "https://api.anthropic.com", APIKey: realAnthropicKey}
		if _, err := Start(Options{Upstreams: []Upstream{u, u}}); !errors.Is(err, ErrUpstream) {
			t.Fatalf("err %v, want ErrUpstream", err)
		}
	})
}

// TestRefusals: what the proxy will not forward never reaches an upstream
// (each case's upstream counts its hits), and is answered with a status
// and a body that says why, and an event with that status. The control
// ("forwarded") shows the same endpoint does reach the upstream.
func TestRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		method string
		path   string
		body   string
		status int
	}{
		{"forwarded", "POST", "/v1/messages", `{"model":"m"}`, http.StatusOK},
		{"path of no upstream", "POST", "/v1/responses", `{}`, http.StatusNotFound},
		{"other path", "GET", "/admin", "", http.StatusNotFound},
		{"dot segments", "POST", "/v1/messages/../../admin", `{}`, http.StatusBadRequest},
		{"escaped slash", "POST", "/v1/messages%2F..%2Fadmin", `{}`, http.StatusBadRequest},
		{"double slash", "POST", "/v1//messages", `{}`, http.StatusBadRequest},
		{"method", "DELETE", "/v1/messages", "", http.StatusMethodNotAllowed},
		{"oversize body", "POST", "/v1/messages", `{"model":"m","x":"` + strings.Repeat("a", 2000) + `"}`, http.StatusRequestEntityTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			up := newUpstream(t, nil)
			_, ep, rec := startProxy(t, Options{
				Upstreams:       []Upstream{{Kind: Anthropic, BaseURL: up.URL, APIKey: realAnthropicKey}},
				MaxRequestBytes: 1000,
			})
			req, err := http.NewRequest(c.method, ep.BaseURL()+"/", strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			req.URL.Opaque = c.path // sent as written, not cleaned by the client
			resp, err := client(ep).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
			}
			hits := up.hits.Load()
			if c.status == http.StatusOK {
				if hits != 1 {
					t.Fatalf("control: the upstream saw %d requests, want 1", hits)
				}
				return
			}
			if hits != 0 {
				t.Errorf("LEAK: a refused request reached the upstream (%d hits)", hits)
			}
			evs := of[event.ProxyRefusalData](rec)
			if rec.count(event.ModelResponse) != 1 || len(evs) != 1 || evs[0].Status != c.status || evs[0].Reason == "" {
				t.Errorf("events %v, want one model_response with status %d and a reason", evs, c.status)
			}
		})
	}
}

// TestRedirectNotFollowed: an upstream that answers 302 to a second server
// does not get that server a request (it counts: zero), and the fork gets
// a 502 that says so, without the Location. The control: the second
// server is reachable directly.
func TestRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	other := newUpstream(t, nil)
	for _, status := range []int{301, 302, 303, 307, 308} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL+"/v1/messages", status)
			})
			_, ep, rec := startProxy(t, Options{Upstreams: []Upstream{{Kind: Anthropic, BaseURL: up.URL, APIKey: realAnthropicKey}}})
			resp, body := post(t, ep, "/v1/messages", `{"model":"m"}`, nil)
			if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("Location") != "" || !strings.Contains(body, "redirects are not followed") {
				t.Errorf("status %d Location %q body %q; want 502 saying redirects are not followed", resp.StatusCode, resp.Header.Get("Location"), body)
			}
			if up.hits.Load() != 1 {
				t.Errorf("control: the first upstream saw %d requests", up.hits.Load())
			}
			scanEvents(t, rec, ep.Placeholder)
		})
	}
	// The parent's cleanup runs after its parallel subtests are done.
	t.Cleanup(func() {
		if n := other.hits.Load(); n != 0 {
			t.Errorf("LEAK: the redirect target was reached %d times", n)
		}
		resp, err := http.Get(other.URL)
		if err != nil || other.hits.Load() != 1 {
			t.Errorf("control: the redirect target is not reachable directly: %v", err)
		} else {
			resp.Body.Close()
		}
	})
}

// TestRateLimit: the fork's requests past RatePerMinute get 429 with a
// Retry-After and a body naming the limit, and never reach the upstream.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, nil)
	_, ep, rec := startProxy(t, Options{
		Upstreams:     []Upstream{{Kind: Anthropic, BaseURL: up.URL, APIKey: realAnthropicKey}},
		RatePerMinute: 3,
	})
	var codes []int
	for range 5 {
		resp, body := post(t, ep, "/v1/messages", `{"model":"m"}`, nil)
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == http.StatusTooManyRequests && (resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "at most 3 requests a minute")) {
			t.Errorf("429 without Retry-After or a clear body: %q", body)
		}
	}
	if fmt.Sprint(codes) != "[200 200 200 429 429]" {
		t.Errorf("statuses %v, want three 200 then 429s", codes)
	}
	ep.Usage() // waits for the last request's accounting
	if up.hits.Load() != 3 {
		t.Errorf("upstream saw %d requests, want 3", up.hits.Load())
	}
	if n := rec.count(event.ModelResponse); n != 5 {
		t.Errorf("%d model_response events, want 5", n)
	}
}

// TestConcurrentRequests: a fork holds at most maxModelRequests model
// requests (and their bodies) in flight; one more is refused with 503 and
// never reaches the upstream, and a slot freed is usable again.
func TestConcurrentRequests(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	entered := make(chan struct{}, maxModelRequests+1)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	})
	_, ep, _ := startProxy(t, Options{Upstreams: []Upstream{{Kind: Anthropic, BaseURL: up.URL, APIKey: realAnthropicKey}}})
	done := make(chan int, maxModelRequests)
	for range maxModelRequests {
		go func() {
			resp, _ := post(t, ep, "/v1/messages", `{}`, nil)
			done <- resp.StatusCode
		}()
	}
	for range maxModelRequests {
		<-entered // every slot taken, each request held by the upstream
	}
	resp, body := post(t, ep, "/v1/messages", `{}`, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "at once") {
		t.Errorf("one request over the bound: %d %q, want 503", resp.StatusCode, body)
	}
	close(release)
	for range maxModelRequests {
		if s := <-done; s != http.StatusOK {
			t.Errorf("a held request ended %d", s)
		}
	}
	ep.Usage() // every slot given back
	if resp, _ := post(t, ep, "/v1/messages", `{}`, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("control: a request after the others ended: %d", resp.StatusCode)
	}
	if n := up.hits.Load(); n != maxModelRequests+1 {
		t.Errorf("upstream saw %d requests, want %d", n, maxModelRequests+1)
	}
}

// TestRateBucket: the bucket on a clock of the test's own: a burst of n,
// then one more per window/n; refused meanwhile with the wait until the
// next; a huge rate costs no memory.
func TestRateBucket(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	r := newRateLimit(60, time.Minute)
	for i := range 60 {
		if ok, _ := r.allow(t0); !ok {
			t.Fatalf("burst: request %d refused", i)
		}
	}
	ok, wait := r.allow(t0)
	if ok || wait != time.Second {
		t.Fatalf("61st: ok %v wait %v, want refused for 1s", ok, wait)
	}
	if ok, _ := r.allow(t0.Add(999 * time.Millisecond)); ok {
		t.Fatalf("admitted before a token was back")
	}
	if ok, _ := r.allow(t0.Add(1001 * time.Millisecond)); !ok {
		t.Fatalf("not admitted once a token was back")
	}
	huge := newRateLimit(1<<62, time.Minute)
	if ok, _ := huge.allow(t0); !ok {
		t.Fatal("a huge rate refused")
	}
}
