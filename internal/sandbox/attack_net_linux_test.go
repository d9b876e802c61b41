package sandbox_test

import (
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
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
