package testutil

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Tally counts what reaches one loopback server — the connections its listener accepts, or the
// datagrams its socket reads — for the tests that check a confined command, a world or a proxy
// did not reach the host's network (and, as their controls, that the unconfined one did).
//
// Its Count is taken after a marker of its own has reached the server too, so nothing queued
// on the server's socket before the count was asked for goes uncounted because the server's
// goroutine had not reached it yet (a loaded machine may run that goroutine late).
type Tally struct {
	network, addr string // the server's, for the marker
	mu            sync.Mutex
	total         int64           // connections or datagrams seen, the markers among them
	markers       int64           // the markers counted so far
	seen          map[string]bool // the source of each seen since the last count
}

// NewTally is the tally of the server at addr, which calls Add for each connection or
// datagram (Listener and CountAccepts do that for a listener).
func NewTally(network, addr string) *Tally {
	return &Tally{network: network, addr: addr, seen: map[string]bool{}}
}

// Addr is the server's address.
func (c *Tally) Addr() string { return c.addr }

// Add counts one connection or datagram, from its source address.
func (c *Tally) Add(from net.Addr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total++
	if from != nil {
		c.seen[from.String()] = true
	}
}

// Listener is ln, each connection it accepts counted (for a server of the test's own, such as
// an HTTP server, to serve on).
func (c *Tally) Listener(ln net.Listener) net.Listener { return tallied{ln, c} }

type tallied struct {
	net.Listener
	n *Tally
}

func (l tallied) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(conn.RemoteAddr())
	}
	return conn, err
}

// CountAccepts accepts on ln until the test ends, closing each connection; the tally counts
// them.
func CountAccepts(t testing.TB, ln net.Listener) *Tally {
	n := NewTally(ln.Addr().Network(), ln.Addr().String())
	go func() {
		for {
			c, err := n.Listener(ln).Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return n
}

// CountDatagrams reads pc until the test ends; the tally counts the datagrams.
func CountDatagrams(t testing.TB, pc net.PacketConn) *Tally {
	n := NewTally(pc.LocalAddr().Network(), pc.LocalAddr().String())
	go func() {
		buf := make([]byte, 64)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			n.Add(from)
		}
	}()
	t.Cleanup(func() { pc.Close() })
	return n
}

// InFlight is how long a test that checks nothing reached a server first leaves to what the
// command sent that the kernel has not yet queued on the server's socket. On loopback that is
// done before the send returns on an idle machine, but a loaded one may defer it to another
// thread.
const InFlight = 200 * time.Millisecond

var markerSeq atomic.Int64

// Count is how many connections or datagrams had been queued on the server's socket when it
// was called (the markers of earlier counts left out). It sends a marker from an address of its
// own and waits, a minute at most, until the server has seen it: a listener's queue hands out
// connections in the order they were made, and a socket's receive queue its datagrams in the
// order they came, so all that was queued before the marker has been counted by then.
//
// The marker's address is one nothing else uses, so an earlier connection is never taken for
// it: for TCP and UDP a port of markerIP (on Linux 127.0.0.2, where confined commands and
// worlds dial from 127.0.0.1), and for UNIX sockets, whose peers are unnamed unless bound, an
// abstract name of its own.
func (c *Tally) Count(t testing.TB) int64 {
	t.Helper()
	var me string
	switch c.network {
	case "tcp", "udp":
		var d net.Dialer
		if c.network == "tcp" {
			d.LocalAddr = &net.TCPAddr{IP: markerIP}
		} else {
			d.LocalAddr = &net.UDPAddr{IP: markerIP}
		}
		conn, err := d.Dial(c.network, c.addr)
		if err != nil {
			t.Fatalf("the count's marker: %v", err)
		}
		if c.network == "udp" {
			if _, err := conn.Write([]byte("marker")); err != nil {
				t.Fatalf("the count's marker: %v", err)
			}
		}
		me = conn.LocalAddr().String()
		conn.Close()
	case "unix":
		me = fmt.Sprintf("@forkbomb-test-marker-%d-%d", os.Getpid(), markerSeq.Add(1))
		conn, err := net.DialUnix("unix", &net.UnixAddr{Name: me, Net: "unix"}, &net.UnixAddr{Name: c.addr, Net: "unix"})
		if err != nil {
			t.Fatalf("the count's marker: %v", err)
		}
		conn.Close()
	default:
		t.Fatalf("a tally of a %s server", c.network)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		if c.seen[me] {
			c.markers++
			clear(c.seen)
			n := c.total - c.markers
			c.mu.Unlock()
			return n
		}
		c.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("the %s server at %s did not see the count's marker within a minute", c.network, c.addr)
		}
	}
}

// markerIP is the address a TCP or UDP marker is sent from: 127.0.0.2 on Linux, whose
// loopback answers all of 127/8; elsewhere (macOS's has only 127.0.0.1 unless configured)
// 127.0.0.1.
var markerIP = func() net.IP {
	if runtime.GOOS == "linux" {
		return net.IPv4(127, 0, 0, 2)
	}
	return net.IPv4(127, 0, 0, 1)
}()

// CountLoopback is a TCP listener on 127.0.0.1 that accepts until the test ends, closing each
// connection, with the tally that counts them.
func CountLoopback(t testing.TB) *Tally {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return CountAccepts(t, ln)
}
