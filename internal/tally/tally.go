// Package tally counts what reaches a loopback server — the connections its listener accepts,
// or the datagrams its socket reads — for the checks that a confined command did not reach
// the host's network: the canary's verdict and the tests' (through internal/testutil).
//
// A count is taken after a marker of its own has reached the server too, so nothing queued on
// the server's socket before the count was asked for goes uncounted because the server's
// goroutine had not reached it yet (a loaded machine may run that goroutine late).
package tally

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Tally counts what reaches one server.
type Tally struct {
	network, addr string // the server's, for the marker
	mu            sync.Mutex
	total         int64           // connections or datagrams seen, the markers among them
	markers       int64           // the markers counted so far
	seen          map[string]bool // the source of each seen since the last count
}

// New is the tally of the server at addr, which calls Add for each connection or datagram
// (Listener and Accepts do that for a listener, Datagrams for a packet socket).
func New(network, addr string) *Tally {
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

// Listener is ln, each connection it accepts counted (for a server of the caller's own, such
// as an HTTP server, to serve on).
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

// Accepts accepts on ln until it is closed, closing each connection; the tally counts them.
func Accepts(ln net.Listener) *Tally {
	n := New(ln.Addr().Network(), ln.Addr().String())
	counted := n.Listener(ln)
	go func() {
		for {
			c, err := counted.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return n
}

// Datagrams reads pc until it is closed; the tally counts the datagrams.
func Datagrams(pc net.PacketConn) *Tally {
	n := New(pc.LocalAddr().Network(), pc.LocalAddr().String())
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
	return n
}

// InFlight is how long a check that nothing reached a server first leaves to what a command
// sent that the kernel has not yet queued on the server's socket. On loopback that is done
// before the send returns on an idle machine, but a loaded one may defer it to another thread.
const InFlight = 200 * time.Millisecond

var markerSeq atomic.Int64

// Count is how many connections or datagrams had been queued on the server's socket when it
// was called (the markers of earlier counts left out). It sends a marker from an address of
// its own and waits until the server has seen it (or ctx ends): a listener's queue hands out
// connections in the order they were made, and a socket's receive queue its datagrams in the
// order they came, so all that was queued before the marker has been counted by then.
func (c *Tally) Count(ctx context.Context) (int64, error) {
	me, err := c.mark(ctx)
	if err != nil {
		return 0, fmt.Errorf("tally: the count's marker to the %s server at %s: %w", c.network, c.addr, err)
	}
	for ; ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		if c.seen[me] {
			c.markers++
			clear(c.seen)
			n := c.total - c.markers
			c.mu.Unlock()
			return n, nil
		}
		c.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("tally: the %s server at %s did not see the count's marker: %w", c.network, c.addr, err)
		}
	}
}

// mark sends the count's marker and returns the address it came from, one the server has not
// seen since the last count, so an earlier connection is never taken for it: for TCP and UDP
// a port of its own choosing, on Linux of 127.0.0.2 (its loopback answers all of 127/8, and
// confined commands dial from 127.0.0.1), elsewhere of 127.0.0.1 (macOS's loopback has no
// other address unless configured), or of ::1 for a server on an IPv6 address (a server on
// every address is dialled on 127.0.0.1); for UNIX
// sockets, whose peers are unnamed unless bound, a name of its own (abstract on Linux, a file
// in a folder of its own elsewhere).
func (c *Tally) mark(ctx context.Context) (string, error) {
	switch c.network {
	case "tcp", "udp":
		ip := net.IPv4(127, 0, 0, 1)
		if runtime.GOOS == "linux" {
			ip = net.IPv4(127, 0, 0, 2)
		}
		to := c.addr
		if host, port, err := net.SplitHostPort(c.addr); err == nil {
			switch a := net.ParseIP(host); {
			case a == nil:
			case a.IsUnspecified():
				// a server on every address: its loopback, which every
				// system dials (not all dial an unspecified address)
				to = net.JoinHostPort("127.0.0.1", port)
			case a.To4() == nil:
				ip = net.IPv6loopback
			}
		}
		var last error
		for range 50 {
			from := net.JoinHostPort(ip.String(), strconv.Itoa(20000+rand.IntN(40000)))
			c.mu.Lock()
			taken := c.seen[from]
			c.mu.Unlock()
			if taken {
				continue
			}
			laddr, err := resolve(c.network, from)
			if err != nil {
				return "", err
			}
			d := net.Dialer{LocalAddr: laddr}
			conn, err := d.DialContext(ctx, c.network, to)
			if err != nil {
				last = err // the port in use: another
				if ctx.Err() != nil {
					break
				}
				continue
			}
			if c.network == "udp" {
				_, err = conn.Write([]byte("marker"))
			}
			me := conn.LocalAddr().String()
			conn.Close()
			return me, err
		}
		return "", fmt.Errorf("no port of %s to send it from: %w", ip, last)
	case "unix":
		name := fmt.Sprintf("@forkbomb-tally-marker-%d-%d", os.Getpid(), markerSeq.Add(1))
		if runtime.GOOS != "linux" {
			dir, err := os.MkdirTemp("", "forkbomb-tally-")
			if err != nil {
				return "", err
			}
			defer os.RemoveAll(dir)
			name = filepath.Join(dir, "marker.sock")
		}
		conn, err := net.DialUnix("unix", &net.UnixAddr{Name: name, Net: "unix"}, &net.UnixAddr{Name: c.addr, Net: "unix"})
		if err != nil {
			return "", err
		}
		conn.Close()
		return name, nil
	}
	return "", fmt.Errorf("a count of a %s server", c.network)
}

// resolve is the address of network ("tcp" or "udp") at hostport.
func resolve(network, hostport string) (net.Addr, error) {
	if network == "udp" {
		return net.ResolveUDPAddr("udp", hostport)
	}
	return net.ResolveTCPAddr("tcp", hostport)
}
