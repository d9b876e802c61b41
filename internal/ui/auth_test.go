package ui

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serve starts a server on the runs of dir for the test's life.
func serve(t *testing.T, o Options) *Server {
	t.Helper()
	s, err := Listen(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return s
}

func base(s *Server) string { return strings.SplitN(s.URL(), "#", 2)[0] }

// TestListenLoopbackOnly: every address but a literal loopback IPv4 one is
// refused before anything listens; the default binds 127.0.0.1.
func TestListenLoopbackOnly(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "[::1]:0", "localhost:0", "192.0.2.1:0", "10.0.0.1:0", "example.com:0", "127.0.0.1"} {
		t.Run(addr, func(t *testing.T) {
			s, err := Listen(Options{RunsDir: t.TempDir(), Addr: addr})
			if err == nil {
				s.ln.Close()
				t.Fatalf("Listen(%q) was accepted, on %s", addr, s.ln.Addr())
			}
			if addr != "127.0.0.1" && !errors.Is(err, ErrNotLoopback) {
				t.Errorf("Listen(%q): %v, want ErrNotLoopback", addr, err)
			}
		})
	}
	// Positive control: the default is accepted, and is loopback.
	s, err := Listen(Options{RunsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.ln.Close()
	if ip := s.ln.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() || ip.To4() == nil {
		t.Errorf("bound to %s", ip)
	}
}

// TestRequestsRefused attacks the server from outside the session: no
// token, a wrong one, a DNS-rebinding Host, a foreign Origin, another
// port's page, a state-changing method. Each is refused without a byte of
// the record, and the same request with the session's token, Host and
// Origin (the positive control) gets it.
func TestRequestsRefused(t *testing.T) {
	t.Parallel()
	runs := t.TempDir()
	id := writeRun(t, runs, hostileEvents())
	s := serve(t, Options{RunsDir: runs})
	host := s.ln.Addr().String()
	good := base(s) + "api/run/" + id + "/events"
	noTok := "http://" + host + "/api/run/" + id + "/events"
	badTok := "http://" + host + "/" + strings.Repeat("A", len(s.token)) + "/api/run/" + id + "/events"
	cases := []struct {
		name, method, url string
		header            map[string]string
		want              int
	}{
		{"control", "GET", good, nil, 200},
		{"control with own Origin", "GET", good, map[string]string{"Origin": "http://" + host, "Sec-Fetch-Site": "same-origin"}, 200},
		{"no token", "GET", noTok, nil, 403},
		{"wrong token", "GET", badTok, nil, 403},
		{"token as query", "GET", "http://" + host + "/api/run/" + id + "/events?token=" + s.token, nil, 403},
		{"rebinding Host", "GET", good, map[string]string{"Host": "evil.example:" + strings.Split(host, ":")[1]}, 403},
		{"localhost Host", "GET", good, map[string]string{"Host": "localhost:" + strings.Split(host, ":")[1]}, 403},
		{"foreign Origin", "GET", good, map[string]string{"Origin": "http://evil.example"}, 403},
		{"other port Origin", "GET", good, map[string]string{"Origin": "http://127.0.0.1:1"}, 403},
		{"null Origin", "GET", good, map[string]string{"Origin": "null"}, 403},
		{"cross-site fetch", "GET", good, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"same-site fetch (another port)", "GET", good, map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"POST", "POST", good, nil, 405},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, c.url, nil)
			for k, v := range c.header {
				if k == "Host" {
					req.Host = v
				} else {
					req.Header.Set(k, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.want, body)
			}
			leaked := strings.Contains(string(body), "tool_result")
			if c.want == 200 && !leaked {
				t.Errorf("the control got no events: %s", body)
			}
			if c.want != 200 && leaked {
				t.Errorf("LEAK: a refused request got the record: %s", body)
			}
			if got := resp.Header.Get("Content-Security-Policy"); !strings.Contains(got, "script-src 'self'") || strings.Contains(got, "unsafe-inline") {
				t.Errorf("CSP %q", got)
			}
		})
	}
}

// TestPathsStayInRuns: ids and patch names that would leave the runs
// directory are refused.
func TestPathsStayInRuns(t *testing.T) {
	t.Parallel()
	runs := t.TempDir()
	id := writeRun(t, runs, hostileEvents())
	s := serve(t, Options{RunsDir: runs})
	for _, p := range []string{"api/run/..%2f..%2fetc/events", "api/run/" + id + "/patch/..%2f..%2frun.json", "api/run/" + id + "/patch/-1", "api/run/" + id + "/patch/01", "api/run/.hidden"} {
		resp, err := http.Get(base(s) + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Errorf("%s: 200", p)
		}
	}
	resp, err := http.Get(base(s) + "api/run/" + id + "/patch/winner")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "+add") {
		t.Errorf("control: winner patch %d %q", resp.StatusCode, body)
	}
	_ = time.Second
}
