package tunnel

import (
	"bytes"
	"encoding/binary"
	"net"
	"sync"
	"time"
)

// conn is one carried connection on either side: the local socket, what
// the other side sent for it waiting to be written (at most Window bytes),
// what this side may still send (the other side's credit), and the two
// directions' ends. Flow control is by credit, as in HTTP/2: a side sends
// a connection's bytes only while it holds credit for them, and gives
// credit back (a window frame) as it writes what it received; so an
// honest side never overflows the other's buffer, and one that does is
// cut. It is forgotten when both directions ended, or cut.
type conn struct {
	id   uint32
	nc   net.Conn
	fin  chan struct{} // the other side sent its EOF: write the buffer, then CloseWrite
	done chan struct{} // cut, or both directions ended
	wake chan struct{} // the buffer grew
	more chan struct{} // credit grew

	mu     sync.Mutex
	buf    bytes.Buffer // received, not yet written to the socket
	credit int          // bytes this side may still send
	sent   int          // bytes sent that the other side has not given credit back for
	allow  int          // bytes the other side may still send
	// readEOF: the local socket said EOF (and the other side was told);
	// wrote: the other side's EOF was passed on; eofOut: by writeLoop.
	readEOF, wrote, eofOut bool
	finOnce, doneOnce      sync.Once
}

func newConn(id uint32, nc net.Conn) *conn {
	return &conn{id: id, nc: nc, fin: make(chan struct{}), done: make(chan struct{}),
		wake: make(chan struct{}, 1), more: make(chan struct{}, 1), credit: Window, allow: Window}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// queue buffers bytes for the writer; false when they are over the
// credit this side gave (the other side broke the protocol: the
// connection is then cut, the stream goes on).
func (c *conn) queue(b []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(b) > c.allow {
		return false
	}
	c.allow -= len(b)
	c.buf.Write(b)
	signal(c.wake)
	return true
}

// grant adds credit the other side gave; false when it gives back more
// than it was sent (a broken protocol).
func (c *conn) grant(n int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n < 0 || n > c.sent {
		return false
	}
	c.sent -= n
	c.credit += n
	signal(c.more)
	return true
}

// take waits for credit and takes up to max bytes of it; false when the
// connection is cut meanwhile.
func (c *conn) take(max int) (int, bool) {
	for {
		c.mu.Lock()
		if c.credit > 0 {
			n := min(c.credit, max)
			c.credit -= n
			c.mu.Unlock()
			return n, true
		}
		c.mu.Unlock()
		select {
		case <-c.more:
		case <-c.done:
			return 0, false
		}
	}
}

// used settles credit taken: n of it sent, the rest given back.
func (c *conn) used(taken, n int) {
	c.mu.Lock()
	c.credit += taken - n
	c.sent += n
	c.mu.Unlock()
}

// allowMore records credit this side is about to give the other.
func (c *conn) allowMore(n int) {
	c.mu.Lock()
	c.allow += n
	c.mu.Unlock()
}

// finish records the other side's EOF.
func (c *conn) finish() { c.finOnce.Do(func() { close(c.fin) }) }

// close cuts the connection both ways.
func (c *conn) close() {
	c.doneOnce.Do(func() {
		close(c.done)
		c.mu.Lock()
		if c.nc != nil {
			c.nc.Close()
		}
		c.mu.Unlock()
	})
}

// attach gives a connection made before its socket (the host side dials
// after the pod's open) its socket; false when it was cut meanwhile.
func (c *conn) attach(nc net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.done:
		nc.Close()
		return false
	default:
	}
	c.nc = nc
	return true
}

// halfDone marks one direction ended and reports whether both have.
func (c *conn) halfDone(read bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if read {
		c.readEOF = true
	} else {
		c.wrote = true
	}
	return c.readEOF && c.wrote
}

// wroteEOF reports whether writeLoop ended by passing the other side's
// EOF on (not by a cut).
func (c *conn) wroteEOF() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.eofOut
}

// writeLoop writes what the other side sent, gives its credit back
// (credit), and after its EOF closes the socket's writing half. It
// reports whether the connection ended cleanly (false: a write failed,
// the caller cuts it).
func (c *conn) writeLoop(credit func(n int) error) bool {
	for {
		c.mu.Lock()
		b := bytes.Clone(c.buf.Bytes())
		c.buf.Reset()
		c.mu.Unlock()
		if len(b) > 0 {
			c.nc.SetWriteDeadline(time.Now().Add(time.Minute)) // a reader that never reads cannot pin it
			if _, err := c.nc.Write(b); err != nil {
				return false
			}
			c.allowMore(len(b)) // before the other side can use it
			if credit(len(b)) != nil {
				return false
			}
			continue
		}
		select {
		case <-c.done:
			return true
		case <-c.wake:
		case <-c.fin:
			c.mu.Lock()
			empty := c.buf.Len() == 0
			c.mu.Unlock()
			if !empty {
				continue
			}
			if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
				cw.CloseWrite()
			}
			c.mu.Lock()
			c.eofOut = true
			c.mu.Unlock()
			return true
		}
	}
}

func windowFrame(id uint32, n int) frame {
	b := make([]byte, 4)
	binary.BigEndian.PutUint32(b, uint32(n))
	return frame{typ: frameWindow, id: id, data: b}
}
