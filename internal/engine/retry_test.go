package engine

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestRetriesAndRedirects: a 429 and a 503 are retried with backoff; a
// redirect is never followed (it could carry the key elsewhere).
func TestRetriesAndRedirects(t *testing.T) {
	srv, err := StartScripted("k-retry", map[string][]Step{"p": {{Text: "hello"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	target, _ := url.Parse(srv.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var calls atomic.Int32
	var redirectFollowed atomic.Bool
	var redirects atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/flaky/", func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			w.Header().Set("retry-after-ms", "10")
			http.Error(w, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, http.StatusTooManyRequests)
		case 2:
			w.Header().Set("retry-after-ms", "10")
			http.Error(w, `{"type":"error","error":{"type":"overloaded_error","message":"busy"}}`, http.StatusServiceUnavailable)
		default:
			r.URL.Path = r.URL.Path[len("/flaky"):]
			testutil.WholeBody(proxy).ServeHTTP(w, r)
		}
	})
	mux.HandleFunc("/redirect/", func(w http.ResponseWriter, r *http.Request) {
		redirects.Add(1)
		http.Redirect(w, r, "/followed/v1/messages", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/followed/", func(w http.ResponseWriter, r *http.Request) {
		redirectFollowed.Store(true)
		http.Error(w, "no", http.StatusTeapot)
	})
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	front := &http.Server{Handler: mux}
	go front.Serve(ln)
	defer front.Close()
	base := "http://" + ln.Addr().String()

	res, err := RunAnthropic(context.Background(), Config{BaseURL: base + "/flaky", APIKey: "k-retry", Model: "scripted"}, "[persona: p] hi")
	if err != nil {
		t.Fatalf("after a 429 and a 503: %v", err)
	}
	if calls.Load() != 3 || res.Turns != 1 {
		t.Errorf("calls %d turns %d; want 3 calls (two retried), 1 turn", calls.Load(), res.Turns)
	}
	if _, err := RunAnthropic(context.Background(), Config{BaseURL: base + "/redirect", APIKey: "k-retry", Model: "scripted"}, "[persona: p] hi"); err == nil {
		t.Errorf("a redirect was accepted")
	}
	if redirectFollowed.Load() {
		t.Errorf("LEAK: the redirect was followed")
	}
	if n := redirects.Load(); n == 0 { // control: the request met the redirect (not a wrong path)
		t.Errorf("control: the redirecting handler was never reached")
	}
}
