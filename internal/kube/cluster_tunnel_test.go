package kube

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/modelproxy"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// events collects a fork's proxy events.
type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) emit(d event.Payload) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, string(d.Kind())+" "+toString(d))
}

func (e *events) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.list, "\n")
}

// messages is a model call as an agent CLI in the pod makes it: to its
// 127.0.0.1:PORT, with the placeholder key it holds.
const messages = `wget -q -O- --header 'content-type: application/json' --header "x-api-key: $ANTHROPIC_API_KEY" \
  --post-data '{"model":"scripted","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"[persona: hi]"}]}' \
  "$ANTHROPIC_BASE_URL/v1/messages"`

// TestClusterTunnel: a command in a pod with the proxy network reaches the
// run's model proxy through the tunnel over the API — the pod has no
// route to this machine — and through it the model, whose key only the
// proxy holds: the scripted model answers only the real key, the pod
// holds a placeholder; the proxy's usage events for the fork arrive as
// on the local backend. Then the forwarder is killed mid-request (a model
// that never answers): the command is stopped and Exec fails with
// ErrTunnelLost, and nothing waits on the dead tunnel (the test's own
// deadline is the bound).
func TestClusterTunnel(t *testing.T) {
	t.Parallel() // a namespace of its own; its waits are the cluster's
	cfg, ns := cluster(t)
	s := openStore(t, cfg, Options{Namespace: ns})
	fork := newRun(t, s, "run-tunnel")
	key := "sk-tunnel-real-" + strings.Repeat("r", 24)
	srv, err := engine.StartScripted(key, map[string][]engine.Step{"hi": {{Text: "hello through the tunnel"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// a model that reads the request and never answers (until the test ends)
	stall := make(chan struct{})
	defer close(stall)
	held := make(chan struct{}) // closed when the model holds a request
	holding := sync.OnceFunc(func() { close(held) })
	hang := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		holding()
		select {
		case <-stall:
		case <-r.Context().Done():
		}
	})}
	hangProxy := startProxy(t, hang)
	proxy, err := modelproxy.Start(modelproxy.Options{Upstreams: []modelproxy.Upstream{{Kind: modelproxy.Anthropic, BaseURL: srv.URL, APIKey: key}}})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	var ev events
	ep, err := proxy.Fork(0, ev.emit)
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	policy := func(ep *modelproxy.Endpoint, command string) sandbox.Policy {
		p := sandbox.Policy{Command: []string{"/bin/sh", "-c", command}, Timeout: 2 * time.Minute,
			Network: sandbox.NetworkProxy, Proxy: &sandbox.Proxy{Socket: ep.Socket, Port: ep.Port}}
		for _, kv := range ep.Env(modelproxy.Anthropic) { // the key a placeholder, as the engines pass it
			if name, v, _ := strings.Cut(kv, "="); name == "ANTHROPIC_API_KEY" {
				p.Placeholders = map[string]string{name: v}
			} else {
				p.SetEnv = append(p.SetEnv, kv)
			}
		}
		return p
	}
	ctx := context.Background()

	t.Run("model call", func(t *testing.T) {
		var out bytes.Buffer
		res, err := s.Exec(ctx, fork, policy(ep, messages+`; echo; env | grep -c `+key+`; echo "key var: $ANTHROPIC_API_KEY"`),
			sandbox.Stdio{Stdout: &out, Stderr: &out})
		if err != nil {
			t.Fatal(err)
		}
		got := out.String()
		if res.ExitCode != 0 || !strings.Contains(got, "hello through the tunnel") {
			t.Fatalf("exit %d; the model's answer did not come back through the tunnel:\n%s", res.ExitCode, got)
		}
		if strings.Contains(got, key) || !strings.Contains(got, "\n0\n") || !strings.Contains(got, "key var: "+ep.Placeholder) {
			t.Errorf("the pod saw the real key, or not the placeholder:\n%s", got)
		}
		if u := ep.Usage(); u.Requests != 1 || u.TokensOut == 0 {
			t.Errorf("the proxy counted %+v for the fork", u)
		}
		if e := ev.String(); !strings.Contains(e, "model_response") || !strings.Contains(e, `"via":"proxy"`) {
			t.Errorf("the fork's proxy events lack its model response:\n%s", e)
		}
	})

	t.Run("the command cannot kill its forwarder", func(t *testing.T) {
		// forkbomb's sandbox in the pod scopes the command's signals to
		// its own processes: the forwarder (the same user, outside it)
		// survives, and the model call after the kill goes through
		if !s.forks[fork].scoped { // set by the model call's start, above
			testutil.SkipOrFail(t, "this node's kernel does not scope a sandbox's signals (Landlock ABI 6, Linux 6.12): the command can kill its forwarder here (SECURITY.md)")
		}
		var out bytes.Buffer
		res, err := s.Exec(ctx, fork, policy(ep, killForwarder+"; "+messages), sandbox.Stdio{Stdout: &out, Stderr: &out})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 0 || !strings.Contains(out.String(), "hello through the tunnel") || !strings.Contains(out.String(), "Operation not permitted") {
			t.Fatalf("exit %d; the kill was not refused, or the model call after it failed:\n%s", res.ExitCode, out.String())
		}
	})

	t.Run("forwarder killed mid-request", func(t *testing.T) {
		hep, err := hangProxy.Fork(0, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer hep.Close()
		// The request is under way (the model holds it) when its
		// forwarder dies; the command itself would wait for 10 minutes.
		// The test kills the forwarder from outside, as a node's failure
		// would (the command may not: see the subtest before).
		kill := messages + ` >/dev/null 2>&1 & sleep 600`
		go func() {
			<-held
			s.stream(context.Background(), s.forks[fork].obj, []string{"/bin/sh", "-c", killForwarder}, nil, nil, nil)
		}()
		var out bytes.Buffer
		p := policy(hep, kill)
		p.Timeout = 10 * time.Minute
		// a hang guard, not a measure: a lost tunnel that did not stop
		// the command would end here with the context's error instead
		hctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		_, err = s.Exec(hctx, fork, p, sandbox.Stdio{Stdout: &out, Stderr: &out})
		if !errors.Is(err, ErrTunnelLost) {
			t.Fatalf("Exec: %v, want ErrTunnelLost\n%s", err, out.String())
		}
		t.Logf("Exec: %v", err)
		// control: the same pod's next command gets a new tunnel
		var again bytes.Buffer
		res, err := s.Exec(ctx, fork, policy(ep, messages), sandbox.Stdio{Stdout: &again, Stderr: &again})
		if err != nil || res.ExitCode != 0 || !strings.Contains(again.String(), "hello through the tunnel") {
			t.Fatalf("the next command's tunnel: %v %+v\n%s", err, res, again.String())
		}
	})
}

// killForwarder kills the tunnel's forwarders in a pod.
const killForwarder = `for p in /proc/[0-9]*; do case "$(tr '\0' ' ' <$p/cmdline)" in "` + podBin + ` __forkbomb""_tunnel "*) kill -9 ${p#/proc/};; esac; done`

// podsOf lists the names of forkbomb's pods in ns.
func podsOf(t *testing.T, cfg *rest.Config, ns string) []string {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Error(err)
		return nil
	}
	l, err := dyn.Resource(podGVR).Namespace(ns).List(context.Background(), metav1.ListOptions{LabelSelector: LabelManaged + "=" + Managed})
	if err != nil {
		t.Error(err)
		return nil
	}
	var out []string
	for _, i := range l.Items {
		out = append(out, i.GetName())
	}
	return out
}

// startProxy is a model proxy whose upstream is srv, on loopback.
func startProxy(t *testing.T, srv *http.Server) *modelproxy.Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	p, err := modelproxy.Start(modelproxy.Options{Upstreams: []modelproxy.Upstream{{Kind: modelproxy.Anthropic,
		BaseURL: "http://" + ln.Addr().String(), APIKey: "sk-hang-" + strings.Repeat("h", 24)}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestClusterNetworkAllow: --network allow on the cluster — the race's
// proxy for allowed hosts reaches the fork's pod through the same tunnel.
// The allowed host is a server on this machine's loopback (allowed by its
// address, as modelproxy requires for one): the agent in the pod fetches
// the fix from it through forkbomb's proxy, and the fix wins; a name not
// allowed is refused by the proxy. Both requests are net_connect events
// in the record. Then a fork's agent kills its own forwarder mid-request:
// that fork crashes naming the lost tunnel, and nothing waits.
func TestClusterNetworkAllow(t *testing.T) {
	t.Parallel() // a namespace of its own; its waits are the cluster's
	cfg, ns := cluster(t)
	s := openStore(t, cfg, Options{Namespace: ns})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stall := make(chan struct{})
	defer close(stall)
	held := make(chan struct{}) // closed when /slow holds a request
	holding := sync.OnceFunc(func() { close(held) })
	host := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" { // holds the request until the test ends
			holding()
			select {
			case <-stall:
			case <-r.Context().Done():
			}
			return
		}
		w.Write([]byte("2\n"))
	})}
	go host.Serve(ln)
	defer host.Close()
	addr := ln.Addr().String()
	agent := `wget -q -O value.new http://` + addr + `/value && mv value.new value; echo "allowed: $?"; wget -q -O- http://example.invalid/; echo "other: $?"`
	o := raceOptions(t, s, fixture(t), agent, 1)
	if o.Allow, err = modelproxy.ParseAllow(addr); err != nil {
		t.Fatal(err)
	}
	r, dir, err := run.Race(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "forks", "0", "agent.log"))
	if r.Status != event.RunWon {
		t.Fatalf("status %s: %+v\nagent.log:\n%s", r.Status, r.Fork, log)
	}
	var allowed, other bool
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.Contains(line, `"type":"net_connect"`) {
			continue
		}
		allowed = allowed || (strings.Contains(line, `"host":"127.0.0.1"`) && strings.Contains(line, `"allowed":true`))
		other = other || (strings.Contains(line, `"host":"example.invalid"`) && strings.Contains(line, `"allowed":false`))
	}
	if !allowed || !other {
		t.Errorf("the proxy's net_connect events (allowed host %v, other name %v) are not in the record:\n%s\nagent.log:\n%s", allowed, other, data, log)
	}

	// The fork's forwarder is killed (from outside the fork's sandbox,
	// whose agent may not signal it) while a request to the allowed host
	// is held there: the fork crashes at once naming the lost tunnel (its
	// agent would sleep 10 minutes; the race's timeout is 2, so a tunnel
	// that did not stop it would read timed-out).
	kill := `wget -q -O- http://` + addr + `/slow >/dev/null 2>&1 & sleep 600`
	go func() {
		select {
		case <-held:
		case <-stall:
			return
		}
		for _, pod := range podsOf(t, cfg, ns) {
			s.stream(context.Background(), pod, []string{"/bin/sh", "-c", killForwarder}, nil, nil, nil)
		}
	}()
	o = raceOptions(t, s, fixture(t), kill, 1)
	o.Allow = []string{addr}
	r, dir, err = run.Race(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	log, _ = os.ReadFile(filepath.Join(dir, "forks", "0", "agent.log"))
	if r.Fork[0].State != event.ForkCrashed || !strings.Contains(string(log), "model tunnel") {
		t.Errorf("a fork whose tunnel was lost: state %s, agent.log:\n%s", r.Fork[0].State, log)
	}
}

// BenchmarkPodTunnel measures what the tunnel costs a command in a pod:
// a command with no network, the same with the proxy network (the
// forwarder's start and hello, its end), and a model call through it.
//
//	go test -run '^$' -bench PodTunnel -benchtime 10x ./internal/kube
func BenchmarkPodTunnel(b *testing.B) {
	cfg, ns := cluster(b)
	local, err := workspace.Open(filepath.Join(b.TempDir(), "state"))
	if err != nil {
		b.Fatal(err)
	}
	s, err := Open(context.Background(), Options{Local: local, Config: cfg, Namespace: ns, UseSandboxCRD: "never"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	top, base, err := workspace.ResolveBase(ctx, fixture(b), "HEAD")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.New(ctx, "run-bench", workspace.NewOptions{Repo: top, Rev: base}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Fork(ctx, "run-bench", "run-bench-f0"); err != nil {
		b.Fatal(err)
	}
	key := "sk-bench-real-" + strings.Repeat("r", 24)
	srv, err := engine.StartScripted(key, map[string][]engine.Step{"hi": {{Text: "hello through the tunnel"}}})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	proxy, err := modelproxy.Start(modelproxy.Options{Upstreams: []modelproxy.Upstream{{Kind: modelproxy.Anthropic, BaseURL: srv.URL, APIKey: key}}})
	if err != nil {
		b.Fatal(err)
	}
	defer proxy.Close()
	ep, err := proxy.Fork(0, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ep.Close()
	run := func(command string, net bool) time.Duration {
		p := sandbox.Policy{Command: []string{"/bin/sh", "-c", command}, Timeout: time.Minute}
		if net {
			p.Network, p.Proxy, p.SetEnv = sandbox.NetworkProxy, &sandbox.Proxy{Socket: ep.Socket, Port: ep.Port}, ep.Env(modelproxy.Anthropic)
		}
		t0 := time.Now()
		res, err := s.Exec(ctx, "run-bench-f0", p, sandbox.Stdio{})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%s: %v %+v", command, err, res)
		}
		return time.Since(t0)
	}
	run(messages, true) // the pod, its tree and the forwarder's binary: once per fork
	var plain, tun, call time.Duration
	for i := 0; i < b.N; i++ {
		plain += run("true", false)
		tun += run("true", true)
		call += run(messages, true)
	}
	ms := func(d time.Duration) float64 { return float64(d.Milliseconds()) / float64(b.N) }
	b.ReportMetric(ms(plain), "ms/command")
	b.ReportMetric(ms(tun), "ms/command-with-tunnel")
	b.ReportMetric(ms(call), "ms/model-call-through-tunnel")
	b.ReportMetric(ms(tun)/ms(plain), "tunnel-command-ratio")
}
