package tunnel

import (
	"net"
	"sync"
	"time"
)

// conn is one carried connection on either side: the local socket, what
// the other side sent for it waiting to be written (bounded), and the two
// directions' ends. It is forgotten when both directions ended, or cut.
type conn struct {
	id   uint32
	nc   net.Conn
	q    chan []byte
	fin  chan struct{} // the other side sent its EOF: write the queue, then CloseWrite
	done chan struct{} // cut, or both directions ended
	mu   sync.Mutex
	// readEOF: the local socket said EOF (and the other side was told);
	// wrote: the other side's EOF was passed on.
	readEOF, wrote bool
	eofOut         bool // writeLoop passed the other side's EOF on
	finOnce        sync.Once
	doneOnce       sync.Once
}

func newConn(id uint32, nc net.Conn) *conn {
	return &conn{id: id, nc: nc, q: make(chan []byte, queueFrames), fin: make(chan struct{}), done: make(chan struct{})}
}

// queue hands bytes to the writer; false when the queue is full (the
// connection is then cut: one slow reader never blocks the stream).
func (c *conn) queue(b []byte) bool {
	select {
	case <-c.done:
		return true // cut already: the bytes have nowhere to go
	default:
	}
	select {
	case c.q <- b:
		return true
	default:
		return false
	}
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

// writeLoop writes what the other side sent, and after its EOF closes the
// local socket's writing half. It reports whether the connection ended
// cleanly (false: a write failed, the caller cuts it).
func (c *conn) writeLoop() bool {
	write := func(b []byte) bool {
		c.nc.SetWriteDeadline(time.Now().Add(time.Minute)) // a reader that never reads cannot pin it
		_, err := c.nc.Write(b)
		return err == nil
	}
	for {
		select {
		case <-c.done:
			return true
		case b := <-c.q:
			if !write(b) {
				return false
			}
		case <-c.fin:
			for {
				select {
				case b := <-c.q:
					if !write(b) {
						return false
					}
					continue
				default:
				}
				break
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

// wroteEOF reports whether writeLoop ended by passing the other side's
// EOF on (not by a cut).
func (c *conn) wroteEOF() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.eofOut
}
