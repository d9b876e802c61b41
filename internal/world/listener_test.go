package world

import (
	"net"
	"sync"
	"testing"
	"time"
)

// countingListener is a loopback listener that counts the connections made to it, for the tests
// that check a world cannot reach the host's network (and, as their control, that bash can).
type countingListener struct {
	net.Listener
	mu      sync.Mutex
	total   int64           // connections accepted, the count's own among them
	markers int64           // the count's own
	seen    map[string]bool // the peer address of each accepted connection not yet counted
}

func newCountingListener(t *testing.T) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	l := &countingListener{Listener: ln, seen: map[string]bool{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.mu.Lock()
			l.total++
			l.seen[c.RemoteAddr().String()] = true
			l.mu.Unlock()
			c.Close()
		}
	}()
	return l
}

// count is how many connections were made to the listener before it was called, whether or
// not its accept loop has reached them yet (a loaded machine may run that loop late): it makes
// a connection of its own and waits (a minute at most) until that one is accepted, as the
// listen queue hands out connections in the order they were made.
func (l *countingListener) count(t *testing.T) int64 {
	t.Helper()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	me := c.LocalAddr().String()
	c.Close()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		l.mu.Lock()
		if l.seen[me] {
			l.markers++
			clear(l.seen)
			n := l.total - l.markers
			l.mu.Unlock()
			return n
		}
		l.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the listener did not accept the test's own connection within a minute")
		}
	}
}
