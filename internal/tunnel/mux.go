package tunnel

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"sync"
)

// mux is one side's connections over the stream: both sides apply the
// other's frames the same way; only who opens differs (Forward accepts,
// Serve dials).
type mux struct {
	wmu   sync.Mutex // frames are written whole, one at a time
	out   *bufio.Writer
	mu    sync.Mutex
	conns map[uint32]*conn
	wg    sync.WaitGroup
}

func newMux(out io.Writer) *mux {
	return &mux{out: bufio.NewWriterSize(out, MaxPayload+headerLen), conns: map[uint32]*conn{}}
}

func (m *mux) send(fr frame) error {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	if err := writeFrame(m.out, fr); err != nil {
		return err
	}
	return m.out.Flush()
}

// add registers a connection; false when MaxConns are open or the id is
// taken.
func (m *mux) add(c *conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.conns) >= MaxConns || m.conns[c.id] != nil {
		return false
	}
	m.conns[c.id] = c
	return true
}

func (m *mux) get(id uint32) *conn {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.conns[id]
}

// forget drops a connection and cuts it.
func (m *mux) forget(c *conn) {
	m.mu.Lock()
	if m.conns[c.id] == c {
		delete(m.conns, c.id)
	}
	m.mu.Unlock()
	c.close()
}

// reset cuts a connection and tells the other side — from a goroutine of
// its own: a stream the other side stopped reading must never block the
// loop that watches it.
func (m *mux) reset(c *conn) {
	m.forget(c)
	go m.send(frame{typ: frameReset, id: c.id})
}

// closeAll cuts every connection (the stream is gone) and waits for their
// goroutines.
func (m *mux) closeAll() {
	m.mu.Lock()
	all := make([]*conn, 0, len(m.conns))
	for _, c := range m.conns {
		all = append(all, c)
	}
	m.conns = map[uint32]*conn{}
	m.mu.Unlock()
	for _, c := range all {
		c.close()
	}
	m.wg.Wait()
}

// start runs a connection whose socket is attached: its writer, and its
// pump of what the socket sends.
func (m *mux) start(c *conn) {
	m.wg.Add(2)
	go func() {
		defer m.wg.Done()
		if !c.writeLoop(func(n int) error { return m.send(windowFrame(c.id, n)) }) {
			select {
			case <-c.done: // cut here already: nothing to tell
			default:
				m.reset(c)
			}
			return
		}
		if c.wroteEOF() && c.halfDone(false) {
			m.forget(c)
		}
	}()
	go func() {
		defer m.wg.Done()
		m.pump(c)
	}()
}

// pump sends what the local socket sends, while it holds credit for it,
// then its EOF.
func (m *mux) pump(c *conn) {
	buf := make([]byte, MaxPayload)
	for {
		want, ok := c.take(MaxPayload)
		if !ok {
			return
		}
		n, err := c.nc.Read(buf[:want])
		c.used(want, n)
		if n > 0 {
			if m.send(frame{typ: frameData, id: c.id, data: append([]byte(nil), buf[:n]...)}) != nil {
				m.forget(c)
				return
			}
		}
		if errors.Is(err, io.EOF) {
			m.send(frame{typ: frameClose, id: c.id})
			if c.halfDone(true) {
				m.forget(c)
			}
			return
		}
		if err != nil {
			select {
			case <-c.done: // cut here: the other side was told, or the stream is gone
			default:
				m.reset(c)
			}
			return
		}
	}
}

// apply applies one of the other side's frames to a connection it names.
func (m *mux) apply(fr frame) {
	c := m.get(fr.id)
	if c == nil {
		return // cut here meanwhile, or never ours
	}
	switch fr.typ {
	case frameData:
		if !c.queue(fr.data) {
			m.reset(c)
		}
	case frameWindow:
		if len(fr.data) != 4 || !c.grant(int(binary.BigEndian.Uint32(fr.data))) {
			m.reset(c)
		}
	case frameClose:
		c.finish()
	case frameReset:
		m.forget(c)
	}
}
