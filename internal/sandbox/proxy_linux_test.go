package sandbox_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// proxyServer stands for forkbomb's model proxy: an HTTP echo on a host
// UNIX socket in a folder of its own, with another service's socket beside
// it, which the sandbox must not reach. Both count what reaches them.
type proxyServer struct {
	sock, sibling       string
	conns, siblingConns *testutil.Tally
	requests            atomic.Int64
}

func startProxyServer(t *testing.T, base string) *proxyServer {
	t.Helper()
	dir := filepath.Join(base, "proxy")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &proxyServer{sock: filepath.Join(dir, "api.sock"), sibling: filepath.Join(dir, "other.sock")}
	ln, err := net.Listen("unix", s.sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if r.Method == http.MethodPost {
			_, _ = io.Copy(w, r.Body)
			return
		}
		fmt.Fprintf(w, "echo %s", r.URL.RequestURI())
	})}
	s.conns = testutil.NewTally("unix", s.sock)
	go func() { _ = srv.Serve(s.conns.Listener(ln)) }()
	t.Cleanup(func() { srv.Close() })

	sib, err := net.Listen("unix", s.sibling)
	if err != nil {
		t.Fatal(err)
	}
	s.siblingConns = testutil.CountAccepts(t, sib)
	return s
}

// TestProxyNetwork: with NetworkProxy, 127.0.0.1:PORT inside the sandbox
// reaches the host's proxy socket — a GET and a 1 MB POST echoed whole —
// and nothing else does: not the host's loopback (the very port the
// command is told is also a listener on the host's 127.0.0.1, which must
// stay untouched), UDP, abstract or path UNIX sockets, DNS, another socket
// in the proxy's own folder, nor the proxy socket by its host path. The
// folder lives outside the folders the sandbox masks anyway where the
// machine has one, so only the policy's own hiding keeps it out of view.
func TestProxyNetwork(t *testing.T) {
	requireLayer(t, "network namespace")
	base, unmasked := testutil.OutsideDir(t)
	ps := startProxyServer(t, base)
	l := startListeners(t)
	hostPort, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nHostPort := testutil.CountAccepts(t, hostPort)
	port := hostPort.Addr().(*net.TCPAddr).Port
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	policy := func(args ...string) sandbox.Policy {
		p := attackPolicy(t, sandbox.ModeNamespaces, t.TempDir(), args...)
		p.Network = sandbox.NetworkProxy
		p.Proxy = &sandbox.Proxy{Socket: ps.sock, Port: port}
		return p
	}

	t.Run("reaches the proxy", func(t *testing.T) {
		c := canary(t)
		o := runPolicy(t, policy("http", url+"/v1/echo?c="+c))
		if o.err != nil || o.code() != 0 || !strings.Contains(o.out, "echo /v1/echo?c="+c) {
			t.Fatalf("GET through the proxy port failed: code %d err %v: %s", o.code(), o.err, o.all())
		}
		o = runPolicy(t, policy("http", url+"/v1/echo", "1000000"))
		if o.err != nil || o.code() != 0 || !strings.Contains(o.out, "echoed 1000000 bytes") {
			t.Fatalf("POST through the proxy port failed: code %d err %v: %s", o.code(), o.err, o.all())
		}
		if n := ps.requests.Load(); n != 2 {
			t.Errorf("the proxy saw %d requests, want 2", n)
		}
	})

	t.Run("nothing else", func(t *testing.T) {
		before := ps.conns.Count(t)
		attacks := append(l.attacks(),
			[]string{"unix", ps.sibling}, // another service beside the proxy
			[]string{"unix", ps.sock},    // the proxy, bypassing the forwarder
			[]string{"tcp", "[::1]:" + strconv.Itoa(port)},
			[]string{"tcp", "127.0.0.1:" + strconv.Itoa(port+1)},
		)
		for _, a := range attacks {
			o := runPolicy(t, policy(a...))
			if o.err != nil {
				t.Fatal(o.err)
			}
			// A UDP send "succeeds" into the sandbox's own loopback; only
			// the host listener's count tells.
			if o.code() == 0 && a[0] != "udp" {
				t.Errorf("LEAK: %v succeeded from a proxy sandbox: %s", a, o.out)
			}
		}
		r, sibling, host, proxy := l.count(t), ps.siblingConns.Count(t), nHostPort.Count(t), ps.conns.Count(t)
		if r.total() != 0 || sibling != 0 || host != 0 || proxy != before {
			t.Errorf("LEAK: host listeners were reached: %s sibling=%d host-port=%d proxy=%d (was %d)",
				r, sibling, host, proxy, before)
		}
	})

	t.Run("control", func(t *testing.T) {
		if !unmasked {
			t.Log("the proxy's folder is under a folder the sandbox masks anyway (no writable folder outside them)")
		}
		before := ps.conns.Count(t)
		for _, a := range append(l.attacks()[:4], []string{"unix", ps.sibling}, []string{"unix", ps.sock}, []string{"tcp", hostPort.Addr().String()}) {
			runPolicy(t, unconfinedPolicy(t, t.TempDir(), a...))
		}
		r, sibling, host, proxy := l.count(t), ps.siblingConns.Count(t), nHostPort.Count(t), ps.conns.Count(t)
		if !r.all() || sibling == 0 || proxy == before || host == 0 {
			t.Fatalf("positive control: unconfined connections not all seen: %s sibling=%d host-port=%d proxy=%d (was %d)",
				r, sibling, host, proxy, before)
		}
		// Unconfined, the forwarder takes a port on the host's loopback.
		free, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		freePort := free.Addr().(*net.TCPAddr).Port
		free.Close()
		p := unconfinedPolicy(t, t.TempDir(), "http", "http://127.0.0.1:"+strconv.Itoa(freePort)+"/nosandbox")
		p.Network, p.Proxy = sandbox.NetworkProxy, &sandbox.Proxy{Socket: ps.sock, Port: freePort}
		if o := runPolicy(t, p); o.err != nil || !strings.Contains(o.out, "echo /nosandbox") {
			t.Errorf("--no-sandbox: the proxy port did not reach the proxy: %v %s", o.err, o.all())
		}
	})
}

// TestProxyRefusedWithoutNetns: where the backend has no network namespace
// — Landlock asked for, or the fallback ModeAuto takes where user
// namespaces are refused (inside a sandbox) — a proxy network is refused,
// never run with the host's loopback open.
func TestProxyRefusedWithoutNetns(t *testing.T) {
	ps := startProxyServer(t, t.TempDir())
	t.Run("landlock", func(t *testing.T) {
		p := shPolicy(sandbox.ModeLandlock, t.TempDir(), "true")
		p.Network, p.Proxy = sandbox.NetworkProxy, &sandbox.Proxy{Socket: ps.sock, Port: 8080}
		_, err := sandbox.Run(t.Context(), p, sandbox.Stdio{})
		if !errors.Is(err, sandbox.ErrInvalidPolicy) || !errors.Is(err, sandbox.ErrProxyNeedsNetns) {
			t.Fatalf("err %v, want ErrInvalidPolicy and ErrProxyNeedsNetns", err)
		}
	})
	t.Run("fallback", func(t *testing.T) {
		requireLayer(t, "user namespace")
		requireLayer(t, "landlock-only fallback")
		o := runPolicy(t, attackPolicy(t, sandbox.ModeNamespaces, t.TempDir(), "nested-proxy", "/bin/true"))
		if o.code() != 3 || !strings.Contains(o.out, "refused (needs netns: true)") {
			t.Fatalf("a proxy sandbox inside a sandbox was not refused for want of a network namespace: code %d: %s", o.code(), o.all())
		}
	})
}

// TestProxyPolicyRefused: a proxy policy that could not be confined as it
// says is refused before anything runs.
func TestProxyPolicyRefused(t *testing.T) {
	base := t.TempDir()
	ps := startProxyServer(t, base)
	wd := filepath.Join(base, "wd")
	writeFile(t, filepath.Join(wd, "a"), "x")
	writeFile(t, filepath.Join(base, "proxy", "plain"), "x")
	writeFile(t, filepath.Join(base, "proxy", "sub", "a"), "x")
	inWorkdir := filepath.Join(wd, "api.sock")
	if ln, err := net.Listen("unix", inWorkdir); err != nil {
		t.Fatal(err)
	} else {
		t.Cleanup(func() { ln.Close() })
	}
	proxy := func(sock string, port int) *sandbox.Proxy { return &sandbox.Proxy{Socket: sock, Port: port} }
	for _, tc := range []struct {
		name    string
		network sandbox.Network
		proxy   *sandbox.Proxy
		workdir string
	}{
		{"no proxy socket", sandbox.NetworkProxy, nil, wd},
		{"proxy without proxy network", sandbox.NetworkNone, proxy(ps.sock, 8080), wd},
		{"proxy with host network", sandbox.NetworkHost, proxy(ps.sock, 8080), wd},
		{"privileged port", sandbox.NetworkProxy, proxy(ps.sock, 80), wd},
		{"port out of range", sandbox.NetworkProxy, proxy(ps.sock, 70000), wd},
		{"not a socket", sandbox.NetworkProxy, proxy(filepath.Join(base, "proxy", "plain"), 8080), wd},
		{"missing socket", sandbox.NetworkProxy, proxy(filepath.Join(base, "proxy", "nope.sock"), 8080), wd},
		{"socket in the workdir", sandbox.NetworkProxy, proxy(inWorkdir, 8080), wd},
		{"socket folder holds the workdir", sandbox.NetworkProxy, proxy(ps.sock, 8080), filepath.Join(base, "proxy", "sub")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := sandbox.Policy{Command: []string{"true"}, Workdir: tc.workdir, Network: tc.network, Proxy: tc.proxy}
			_, err := sandbox.Run(t.Context(), p, sandbox.Stdio{})
			t.Log(err)
			if !errors.Is(err, sandbox.ErrInvalidPolicy) {
				t.Errorf("err %v, want ErrInvalidPolicy", err)
			}
		})
	}
}
