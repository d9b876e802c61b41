package testutil

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/tally"
)

// Tally counts what reaches one loopback server, for the tests that check a confined
// command, a world or a proxy did not reach the host's network (and, as their controls, that
// the unconfined one did): a tally.Tally whose Count fails the test instead of returning an
// error.
type Tally struct{ *tally.Tally }

// InFlight is how long a test that checks nothing reached a server first waits: tally.InFlight.
const InFlight = tally.InFlight

// NewTally is the tally of the server at addr, which calls Add for each connection or
// datagram.
func NewTally(network, addr string) *Tally { return &Tally{tally.New(network, addr)} }

// CountAccepts accepts on ln until the test ends, closing each connection; the tally counts
// them.
func CountAccepts(t testing.TB, ln net.Listener) *Tally {
	t.Cleanup(func() { ln.Close() })
	return &Tally{tally.Accepts(ln)}
}

// CountDatagrams reads pc until the test ends; the tally counts the datagrams.
func CountDatagrams(t testing.TB, pc net.PacketConn) *Tally {
	t.Cleanup(func() { pc.Close() })
	return &Tally{tally.Datagrams(pc)}
}

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

// Count is how many connections or datagrams had been queued on the server's socket when it
// was called (tally.Tally.Count), waiting a minute at most for its marker.
func (c *Tally) Count(t testing.TB) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := c.Tally.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
