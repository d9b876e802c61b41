package sandbox_test

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// listeners are host-side servers that count what reaches them: the
// verdict of the network tests, taken outside the sandbox.
type listeners struct {
	tcp, udp, abstract, path     string
	nTCP, nUDP, nAbstract, nPath atomic.Int64
}

func startListeners(t *testing.T) *listeners {
	t.Helper()
	l := &listeners{}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.tcp = tcp.Addr().String()
	countAccepts(t, tcp, &l.nTCP)

	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.udp = udp.LocalAddr().String()
	t.Cleanup(func() { udp.Close() })
	go func() {
		buf := make([]byte, 64)
		for {
			if _, _, err := udp.ReadFrom(buf); err != nil {
				return
			}
			l.nUDP.Add(1)
		}
	}()

	l.abstract = fmt.Sprintf("@forkbomb-test-%d", time.Now().UnixNano())
	abs, err := net.Listen("unix", l.abstract)
	if err != nil {
		t.Fatal(err)
	}
	countAccepts(t, abs, &l.nAbstract)

	// A host service's socket in a folder the sandbox hides (here a
	// sibling of the workdir under the host's /tmp).
	l.path = t.TempDir() + "/service.sock"
	ps, err := net.Listen("unix", l.path)
	if err != nil {
		t.Fatal(err)
	}
	countAccepts(t, ps, &l.nPath)
	return l
}

// countAccepts accepts on ln until the test ends, counting and closing
// each connection.
func countAccepts(t *testing.T, ln net.Listener, n *atomic.Int64) {
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
}

func (l *listeners) attacks() [][]string {
	return [][]string{{"tcp", l.tcp}, {"udp", l.udp}, {"unix", l.abstract}, {"unix", l.path}, {"dns", "example.com"}}
}

func (l *listeners) counts() string {
	return fmt.Sprintf("tcp=%d udp=%d abstract=%d path=%d", l.nTCP.Load(), l.nUDP.Load(), l.nAbstract.Load(), l.nPath.Load())
}

func (l *listeners) total() int64 {
	return l.nTCP.Load() + l.nUDP.Load() + l.nAbstract.Load() + l.nPath.Load()
}

// TestAttackNetwork: with --network none nothing reaches the host: not
// TCP or UDP on the host's loopback, not an abstract UNIX socket, not a
// service's UNIX socket, not DNS.
func TestAttackNetwork(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		l := startListeners(t)
		for _, a := range l.attacks() {
			o := runPolicy(t, attackPolicy(t, mode, t.TempDir(), a...))
			if o.err != nil {
				t.Fatal(o.err)
			}
			if a[0] == "dns" && o.code() == 0 {
				t.Errorf("LEAK: name resolution worked")
			}
		}
		time.Sleep(200 * time.Millisecond) // let a datagram in flight arrive
		if l.total() != 0 {
			t.Errorf("LEAK: host listeners were reached: %s", l.counts())
		}
	})
	t.Run("control", func(t *testing.T) {
		l := startListeners(t)
		for _, a := range l.attacks()[:4] {
			runPolicy(t, unconfinedPolicy(t, t.TempDir(), a...))
		}
		time.Sleep(200 * time.Millisecond)
		if l.nTCP.Load() == 0 || l.nUDP.Load() == 0 || l.nAbstract.Load() == 0 || l.nPath.Load() == 0 {
			t.Fatalf("positive control: unconfined connections not all seen: %s", l.counts())
		}
	})
}

// TestOwnLoopback: in namespace mode the command has a working loopback of
// its own, so test suites that start local servers still run.
func TestOwnLoopback(t *testing.T) {
	requireLayer(t, "network namespace")
	o := runPolicy(t, shPolicy(sandbox.ModeNamespaces, t.TempDir(),
		`/usr/bin/python3 -c '
import socket, threading
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
threading.Thread(target=lambda: s.accept()[0].sendall(b"pong")).start()
c = socket.create_connection(s.getsockname()); print(c.recv(4).decode())'`))
	if o.err != nil || o.code() != 0 || o.out != "pong\n" {
		t.Fatalf("loopback inside the sandbox does not work: code %d, %q", o.code(), o.all())
	}
}

// TestNetworkHost: --network host is the explicit opt-out.
func TestNetworkHost(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		l := startListeners(t)
		p := attackPolicy(t, mode, t.TempDir(), "tcp", l.tcp)
		p.Network = sandbox.NetworkHost
		runPolicy(t, p)
		if l.nTCP.Load() != 1 {
			t.Fatalf("--network host: the host listener was not reached (%s)", l.counts())
		}
	})
}

// TestAttackNetworkListeningProxy: on the landlock backend, a proxy that
// already listens in the caller's network (Proxy.Listening: forkbomb's
// forwarder in a pod) is the command's one way out. The proxy's port is
// reached — the control — while TCP to another port of the same loopback,
// UDP, an abstract or a path UNIX socket, DNS and a TCP Fast Open send to
// the other port reach nothing, as counted by the listeners. The
// unconfined run of the same fast-open send reaches its listener: the
// attack works where nothing stops it.
func TestAttackNetworkListeningProxy(t *testing.T) {
	requireLayer(t, "landlock-only fallback")
	if abi := landlockABIOf(t); abi < 4 {
		testutil.SkipOrFail(t, "Landlock ABI %d has no network rules (ABI 4, Linux 6.7)", abi)
	}
	proxy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var nProxy atomic.Int64
	countAccepts(t, proxy, &nProxy)
	port := proxy.Addr().(*net.TCPAddr).Port
	l := startListeners(t)
	attacks := append(l.attacks(), []string{"tfo", l.tcp})
	for _, a := range append(attacks, []string{"tcp", proxy.Addr().String()}) {
		p := attackPolicy(t, sandbox.ModeLandlock, t.TempDir(), a...)
		p.Network, p.Proxy = sandbox.NetworkProxy, &sandbox.Proxy{Port: port, Listening: true}
		o := runPolicy(t, p)
		if o.err != nil {
			t.Fatalf("%v: %v", a, o.err)
		}
		t.Logf("%v: exit %d %s", a, o.code(), strings.TrimSpace(o.all()))
	}
	time.Sleep(200 * time.Millisecond) // let a datagram in flight arrive
	if l.total() != 0 {
		t.Errorf("LEAK: listeners other than the proxy's were reached: %s", l.counts())
	}
	if nProxy.Load() != 1 {
		t.Errorf("control: the proxy's port was reached %d times, want 1", nProxy.Load())
	}
	t.Run("control", func(t *testing.T) {
		l := startListeners(t)
		runPolicy(t, unconfinedPolicy(t, t.TempDir(), "tfo", l.tcp))
		time.Sleep(200 * time.Millisecond)
		if l.nTCP.Load() == 0 {
			t.Fatalf("positive control: an unconfined fast-open send did not reach its listener: %s", l.counts())
		}
	})
	t.Run("namespaces refuse it", func(t *testing.T) {
		p := attackPolicy(t, sandbox.ModeNamespaces, t.TempDir(), "tcp", proxy.Addr().String())
		p.Network, p.Proxy = sandbox.NetworkProxy, &sandbox.Proxy{Port: port, Listening: true}
		if o := runPolicy(t, p); !errors.Is(o.err, sandbox.ErrInvalidPolicy) {
			t.Fatalf("a listening proxy on the namespaces backend: %v, want ErrInvalidPolicy", o.err)
		}
	})
}

// landlockABIOf is the Landlock ABI the probe found, 0 for none.
func landlockABIOf(t *testing.T) int {
	t.Helper()
	abi := 0
	if l := probe(t).Layer("landlock"); l != nil && l.Status == "ok" {
		fmt.Sscanf(l.Detail, "ABI %d", &abi)
	}
	return abi
}
