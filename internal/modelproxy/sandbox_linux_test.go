package modelproxy

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// countingWeb is an HTTP server on the host's loopback with the tally of
// the connections made to it.
func countingWeb(t *testing.T, body string) (addr string, conns *testutil.Tally) {
	t.Helper()
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(body)) }))
	conns = testutil.NewTally("tcp", s.Listener.Addr().String())
	s.Listener = conns.Listener(s.Listener)
	s.Start()
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://"), conns
}

// TestFromInsideSandbox: from inside a real sandbox (Network proxy, the
// endpoint's socket bridged to 127.0.0.1:8119), curl reaches the model
// upstream through the proxy — which sees the real key, never the
// placeholder — and a host in Allow through CONNECT; it reaches nothing
// else: not a host outside Allow (through CONNECT, absolute form, or
// directly), nor the upstream directly. Every count is read outside, on
// the servers. The control runs the same commands unconfined and reaches
// the host that must stay out.
func TestFromInsideSandbox(t *testing.T) {
	testutil.Need(t, "curl")
	rep, err := sandbox.Probe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if l := rep.Layer("network namespace"); l == nil || l.Status != "ok" {
		testutil.SkipOrFail(t, "no network namespace here: a proxy network cannot be confined")
	}
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\nMODEL-OK\n"))
	})
	allowed, allowedConns := countingWeb(t, "ALLOWED-OK")
	other, otherConns := countingWeb(t, "OTHER-REACHED")

	base, _ := testutil.OutsideDir(t)
	p, err := Start(Options{
		Upstreams: []Upstream{{Kind: Anthropic, BaseURL: up.URL, APIKey: realAnthropicKey}},
		Allow:     []string{allowed},
		Dir:       base,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rec := &recorder{}
	ep, err := p.Fork(1, rec.emit)
	if err != nil {
		t.Fatal(err)
	}

	// Each line prints a marker only if its curl succeeded. NO_PROXY
	// names 127.0.0.1 (the endpoint itself), where this test's hosts
	// live too, so the proxied lines clear it with --noproxy ''.
	script := strings.Join([]string{
		`curl -sS --max-time 10 -X POST "$ANTHROPIC_BASE_URL/v1/messages" -H "x-api-key: $ANTHROPIC_API_KEY" -d '{"model":"m"}' && echo`,
		`curl -sS --max-time 10 --noproxy '' -p -x "$HTTPS_PROXY" http://` + allowed + `/ && echo`,
		`curl -sS --max-time 10 --noproxy '' -p -x "$HTTPS_PROXY" http://` + other + `/ && echo LEAK-connect`,
		`curl -sS --max-time 10 --noproxy '' -f -x "$HTTP_PROXY" http://` + other + `/ && echo LEAK-absolute`,
		`curl -sS --max-time 5 --noproxy '*' http://` + other + `/ && echo LEAK-direct`,
		`curl -sS --max-time 5 --noproxy '*' ` + up.URL + `/v1/messages && echo LEAK-upstream`,
		`env | grep -q REALKEY && echo LEAK-env`,
		`true`,
	}, "\n")
	pol := sandbox.Policy{
		Command: []string{"/bin/sh", "-c", script},
		Workdir: t.TempDir(),
		Network: sandbox.NetworkProxy,
		Proxy:   &sandbox.Proxy{Socket: ep.Socket, Port: ep.Port},
		Timeout: 2 * time.Minute,
		Mode:    sandbox.ModeNamespaces,
	}
	placeholders := map[string]string{}
	for _, kv := range ep.Env(Anthropic) {
		name, val, _ := strings.Cut(kv, "=")
		if strings.HasSuffix(name, "_KEY") {
			placeholders[name] = val
		} else {
			pol.SetEnv = append(pol.SetEnv, kv)
		}
	}
	pol.Placeholders = placeholders
	var out, errb bytes.Buffer
	res, err := sandbox.Run(t.Context(), pol, sandbox.Stdio{Stdout: &out, Stderr: &errb})
	if err != nil {
		t.Fatal(err)
	}
	got := out.String()
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", res.ExitCode, got, errb.String())
	if !strings.Contains(got, "MODEL-OK") || !strings.Contains(got, "ALLOWED-OK") {
		t.Errorf("control: the model or the allowed host was not reached from inside")
	}
	if strings.Contains(got, "LEAK") || strings.Contains(got, "OTHER-REACHED") {
		t.Errorf("LEAK from inside the sandbox: %s", got)
	}
	// connections, not requests: a proxy that dialled the host and then
	// refused to pass the request on counts too
	time.Sleep(testutil.InFlight)
	if n := otherConns.Count(t); n != 0 {
		t.Errorf("LEAK: %d connections were made to the host not allowed", n)
	}
	if n := allowedConns.Count(t); up.hits.Load() != 1 || n != 1 {
		t.Errorf("upstream hits %d, connections to the allowed host %d; want 1 each", up.hits.Load(), n)
	}
	if h, _ := up.last(); h.Get("X-Api-Key") != realAnthropicKey {
		t.Errorf("the upstream did not get the real key")
	}
	if u := ep.Usage(); u.TokensIn != 9 {
		t.Errorf("usage %+v, want 9 tokens in", u)
	}
	var refused int
	for _, d := range of[event.NetConnectData](rec) {
		if !d.Allowed {
			refused++
		}
	}
	if refused != 2 {
		t.Errorf("%d net_connect refusals, want 2 (CONNECT and absolute form)", refused)
	}
	scanEvents(t, rec, ep.Placeholder)

	// Control: the same direct request, unconfined, reaches the host.
	if err := exec.Command("curl", "-sS", "--max-time", "5", "--noproxy", "*", "http://"+other+"/").Run(); err != nil || otherConns.Count(t) == 0 {
		t.Fatalf("positive control: the host that must stay out is not reachable unconfined: %v", err)
	}
	c, err := net.Dial("unix", ep.Socket)
	if err != nil {
		t.Fatalf("control: the endpoint's socket is not reachable from the host: %v", err)
	}
	c.Close()
}
