package sandbox_test

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// listeners are host-side servers that count what reaches them: the
// verdict of the network tests, taken outside the sandbox.
type listeners struct {
	tcp, udp, abstract, path     string
	nTCP, nUDP, nAbstract, nPath *testutil.Tally
}

func startListeners(t *testing.T) *listeners {
	t.Helper()
	l := &listeners{}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.tcp = tcp.Addr().String()
	l.nTCP = testutil.CountAccepts(t, tcp)

	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.udp = udp.LocalAddr().String()
	l.nUDP = testutil.CountDatagrams(t, udp)

	l.abstract = fmt.Sprintf("@forkbomb-test-%d", time.Now().UnixNano())
	abs, err := net.Listen("unix", l.abstract)
	if err != nil {
		t.Fatal(err)
	}
	l.nAbstract = testutil.CountAccepts(t, abs)

	// A host service's socket in a folder the sandbox hides (here a
	// sibling of the workdir under the host's /tmp).
	l.path = t.TempDir() + "/service.sock"
	ps, err := net.Listen("unix", l.path)
	if err != nil {
		t.Fatal(err)
	}
	l.nPath = testutil.CountAccepts(t, ps)
	return l
}

func (l *listeners) attacks() [][]string {
	return [][]string{{"tcp", l.tcp}, {"udp", l.udp}, {"unix", l.abstract}, {"unix", l.path}, {"dns", "example.com"}}
}

// reached is what reached each of the listeners, as counted once (after
// testutil.InFlight, for what the kernel may still be queueing).
type reached struct{ tcp, udp, abstract, path int64 }

func (l *listeners) count(t *testing.T) reached {
	t.Helper()
	time.Sleep(testutil.InFlight)
	return reached{l.nTCP.Count(t), l.nUDP.Count(t), l.nAbstract.Count(t), l.nPath.Count(t)}
}

func (r reached) String() string {
	return fmt.Sprintf("tcp=%d udp=%d abstract=%d path=%d", r.tcp, r.udp, r.abstract, r.path)
}

func (r reached) total() int64 { return r.tcp + r.udp + r.abstract + r.path }

// all says each listener was reached: the positive controls' verdict.
func (r reached) all() bool { return r.tcp > 0 && r.udp > 0 && r.abstract > 0 && r.path > 0 }

// TestAttackNetwork: with --network none nothing reaches the host: not
// TCP or UDP on the host's loopback, not an abstract UNIX socket, not a
// service's UNIX socket, not DNS — as counted by the listeners, and, for
// every connection, as the attack itself reports.
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
			// the attack's own word, beside the count: a connection it made
			// is a leak whatever the listener had counted by then (UDP's send
			// succeeds on a loopback of the sandbox's own, so only its count
			// tells)
			if (a[0] == "tcp" || a[0] == "unix") && o.code() == 0 {
				t.Errorf("LEAK: %s connected to %s from the sandbox: %s", a[0], a[1], o.all())
			}
		}
		if r := l.count(t); r.total() != 0 {
			t.Errorf("LEAK: host listeners were reached: %s", r)
		}
	})
	t.Run("control", func(t *testing.T) {
		l := startListeners(t)
		for _, a := range l.attacks()[:4] {
			if o := runPolicy(t, unconfinedPolicy(t, t.TempDir(), a...)); o.code() != 0 {
				t.Errorf("positive control: the unconfined %s attack on %s reported failure: %s", a[0], a[1], o.all())
			}
		}
		if r := l.count(t); !r.all() {
			t.Fatalf("positive control: unconfined connections not all seen: %s", r)
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
		if r := l.count(t); r.tcp != 1 {
			t.Fatalf("--network host: the host listener was not reached once (%s)", r)
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
	nProxy := testutil.CountAccepts(t, proxy)
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
		// every attack but the proxy's own is refused by the kernel, in its
		// own word (a lookup's wording is its resolver's: its exit alone)
		kernel := strings.Contains(o.out, "not permitted") || strings.Contains(o.out, "permission denied") || a[0] == "dns"
		if a[1] != proxy.Addr().String() && (o.code() != 3 || !strings.Contains(o.out, "refused:") || !kernel) {
			t.Errorf("LEAK or no probe: %v was not refused by the kernel (exit %d): %s", a, o.code(), o.all())
		}
	}
	if r := l.count(t); r.total() != 0 {
		t.Errorf("LEAK: listeners other than the proxy's were reached: %s", r)
	}
	if n := nProxy.Count(t); n != 1 {
		t.Errorf("control: the proxy's port was reached %d times, want 1", n)
	}
	t.Run("control", func(t *testing.T) {
		l := startListeners(t)
		runPolicy(t, unconfinedPolicy(t, t.TempDir(), "tfo", l.tcp))
		if r := l.count(t); r.tcp == 0 {
			t.Fatalf("positive control: an unconfined fast-open send did not reach its listener: %s", r)
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
