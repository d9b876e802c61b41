package tunnel

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// echoSocket is the host's socket (a model proxy's stand-in): it echoes
// each connection until its EOF, then closes.
func echoSocket(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return p
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func dialUnix(p string) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", p)
	}
}

// pair runs Forward (the pod side) and Serve (the host side) over two
// pipes, as an exec's stdout and stdin carry them, and returns the pod's
// port once it listens; stop ends the stream and returns Serve's error.
func pair(t *testing.T, o Options) (port int, stop func() error) {
	t.Helper()
	port = freePort(t)
	podOutR, podOutW := io.Pipe()
	podInR, podInW := io.Pipe()
	go func() { Forward(port, podInR, podOutW); podOutW.Close() }()
	ready := make(chan struct{})
	o.Ready = func() { close(ready) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, podOutR, podInW, o) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Serve before the hello: %v", err)
	}
	return port, func() error {
		cancel()
		err := <-done
		podInW.Close()
		podOutR.Close()
		return err
	}
}

// TestTunnelCarries: connections made in the "pod" reach the host socket
// and back, several at once, whole and in order, each with its EOF (a
// client that closes its writing half still reads the whole answer).
func TestTunnelCarries(t *testing.T) {
	t.Parallel()
	port, stop := pair(t, Options{Dial: dialUnix(echoSocket(t))})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := make([]byte, 1<<20+i)
			rand.Read(data)
			c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", itoa(port)))
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			go func() { c.Write(data); c.(*net.TCPConn).CloseWrite() }()
			got, err := io.ReadAll(c)
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("connection %d: %d bytes back of %d (%v)", i, len(got), len(data), err)
			}
		}()
	}
	wg.Wait()
	if err := stop(); err != nil {
		t.Errorf("Serve after a normal stop: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// hostile writes frames as a hostile pod would, and returns Serve's
// error; dials counts what Serve dialled.
func hostile(t *testing.T, o Options, frames ...frame) (int, []byte, error) {
	t.Helper()
	var dials atomic.Int32
	dial := o.Dial
	if dial == nil {
		dial = dialUnix(echoSocket(t))
	}
	o.Dial = func(ctx context.Context) (net.Conn, error) { dials.Add(1); return dial(ctx) }
	r, w := io.Pipe()
	go func() {
		for _, f := range frames {
			if f.typ == 0 {
				time.Sleep(time.Duration(f.id) * time.Millisecond)
				continue
			}
			var h [headerLen]byte
			h[0] = f.typ
			putU32(h[1:5], f.id)
			n := uint32(len(f.data))
			if f.typ == 'X' { // a header claiming more than MaxPayload
				h[0], n = frameData, MaxPayload+1
			}
			putU32(h[5:9], n)
			if _, err := w.Write(append(h[:], f.data...)); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { w.Close() })
	var out testutil.Buffer // what Serve writes to the "pod", read after it returned (a reset's frame is sent from a goroutine of its own)
	err := Serve(context.Background(), r, &out, o)
	return int(dials.Load()), out.Bytes(), err
}

// stuckSocket is a host socket that accepts and never reads.
func stuckSocket(t *testing.T) func(context.Context) (net.Conn, error) {
	p := filepath.Join(t.TempDir(), "stuck")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan net.Conn, 8)
	t.Cleanup(func() {
		ln.Close()
		for {
			select {
			case c := <-held:
				c.Close()
			default:
				return
			}
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held <- c
		}
	}()
	return dialUnix(p)
}

func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}

// TestServeHostileStream: whatever the pod's stream says or fails to say,
// Serve returns ErrLost — it never hangs on it — and never holds more
// than MaxConns connections.
func TestServeHostileStream(t *testing.T) {
	t.Parallel()
	hi := frame{typ: frameHello, data: []byte(hello)}
	opens := []frame{hi}
	for i := 1; i <= 3*MaxConns; i++ {
		opens = append(opens, frame{typ: frameOpen, id: uint32(i)})
	}
	opens = append(opens, frame{typ: 0, id: 300}, frame{typ: 'Z'})
	// an open connection whose data goes past the credit Serve gave
	overCredit := []frame{hi, {typ: frameOpen, id: 1}, {typ: 0, id: 200}}
	for i := 0; i <= 3*Window/MaxPayload; i++ { // past the credit and the socket's own buffer
		overCredit = append(overCredit, frame{typ: frameData, id: 1, data: make([]byte, MaxPayload)})
	}
	overCredit = append(overCredit, frame{typ: 0, id: 300}, frame{typ: 'Z'})
	short := Options{HelloTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond}
	for _, c := range []struct {
		name     string
		frames   []frame
		maxDials int
		why      string // in the error
		reset    uint32 // a connection Serve must cut
	}{
		{"no hello", nil, 0, "did not answer", 0},
		{"wrong hello", []frame{{typ: frameHello, data: []byte("other/1")}}, 0, "did not speak", 0},
		{"data before hello", []frame{{typ: frameData, id: 1, data: []byte("x")}}, 0, "did not speak", 0},
		{"oversized frame", []frame{hi, {typ: 'X'}}, 0, "a frame of", 0},
		{"unknown type", []frame{hi, {typ: 'Z'}}, 0, "unknown frame type", 0},
		{"second hello", []frame{hi, hi}, 0, "second hello", 0},
		{"silent after hello", []frame{hi}, 0, "nothing came", 0},
		{"data for no connection", []frame{hi, {typ: frameData, id: 7, data: []byte("x")}, {typ: frameReset, id: 9}}, 0, "nothing came", 0},
		{"too many connections", opens, MaxConns, "unknown frame type", 0},
		{"data over the credit", overCredit, 1, "unknown frame type", 1}, // to a socket that never reads
		{"credit over the window", []frame{hi, {typ: frameOpen, id: 1}, {typ: 0, id: 200}, windowFrame(1, 1), {typ: 0, id: 200}, {typ: 'Z'}}, 1, "unknown frame type", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o := short
			if c.why != "did not answer" && c.why != "nothing came" {
				// ended by a frame, not by silence: a loaded machine must
				// not make the silence timer fire first
				o.HelloTimeout, o.IdleTimeout = time.Minute, time.Minute
			}
			if c.why == "nothing came" {
				// the hello is written at once; on a loaded machine it
				// may still be read after 300ms, so only the silence
				// after it is timed short
				o.HelloTimeout = time.Minute
			}
			if c.reset != 0 && c.name == "data over the credit" {
				o.Dial = stuckSocket(t)
			}
			dials, out, err := hostile(t, o, c.frames...)

			if c.reset != 0 && !bytes.Contains(out, []byte{frameReset, 0, 0, 0, byte(c.reset), 0, 0, 0, 0}) {
				t.Errorf("connection %d was not reset", c.reset)
			}
			if !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), c.why) {
				t.Errorf("Serve returned %v, want ErrLost: %s", err, c.why)
			}
			if dials > c.maxDials {
				t.Errorf("%d dials, at most %d", dials, c.maxDials)
			}
		})
	}
}

// TestTunnelLost: the forwarder dying mid-request (its stream ends) is
// ErrLost at once, and the connection it carried is cut, not left
// waiting; the control, a tunnel left alone, carries the same request.
func TestTunnelLost(t *testing.T) {
	t.Parallel()
	// a host socket that reads the request and never answers
	p := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(io.Discard, c)
		}
	}()
	port := freePort(t)
	podOutR, podOutW := io.Pipe()
	podInR, podInW := io.Pipe()
	go Forward(port, podInR, podOutW)
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Serve(context.Background(), podOutR, podInW, Options{Dial: dialUnix(p), Ready: func() { close(ready) }})
	}()
	<-ready
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("POST / HTTP/1.1\r\n\r\n"))
	podOutW.CloseWithError(errors.New("the forwarder was killed")) // the exec's stdout ends
	if err := <-done; !errors.Is(err, ErrLost) {
		t.Fatalf("Serve: %v, want ErrLost", err)
	}
	podInR.Close() // what the exec's end does to the forwarder's stdin
	c.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the pod's connection was not cut: %v", err)
	}
}

// TestTunnelSlowReader: a host socket that never reads stalls its own
// connection (the pod side runs out of credit and stops reading its
// socket), and the stream — with every other connection on it — goes on.
func TestTunnelSlowReader(t *testing.T) {
	t.Parallel()
	stuck := stuckSocket(t)
	echo := echoSocket(t)
	var n atomic.Int32
	blocked := make(chan struct{})
	port, stop := pair(t, Options{Dial: func(ctx context.Context) (net.Conn, error) {
		if n.Add(1) == 1 {
			c, err := stuck(ctx)
			if err != nil {
				return nil, err
			}
			return &blockingConn{Conn: c, blocked: blocked, closed: make(chan struct{})}, nil
		}
		return dialUnix(echo)(ctx)
	}})
	defer stop()
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go c.Write(make([]byte, 64<<20)) // stalls once the credit and the socket buffers are full
	// the first connection's writer is blocked: from here on its credit is
	// never given back, so its sender runs out of credit soon after (that
	// point itself is not waited for: a mux that blocked only then could
	// still pass)
	select {
	case <-blocked:
	case <-time.After(time.Minute):
		t.Fatal("the first connection's bytes never reached its socket")
	}
	// control and the point: the next connection still works
	c2, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.SetDeadline(time.Now().Add(time.Minute))
	c2.Write([]byte("still here"))
	c2.(*net.TCPConn).CloseWrite()
	if got, err := io.ReadAll(c2); string(got) != "still here" {
		t.Fatalf("the next connection: %q %v", got, err)
	}
}

// blockingConn is a socket whose reader never reads and whose buffers
// are full from the start: each Write blocks until its deadline or Close,
// and the first closes blocked.
type blockingConn struct {
	net.Conn
	blocked, closed chan struct{}
	first, close    sync.Once
	deadline        atomic.Int64 // the write deadline, Unix nanoseconds; 0: none
}

func (c *blockingConn) SetWriteDeadline(t time.Time) error {
	if t.IsZero() {
		c.deadline.Store(0)
	} else {
		c.deadline.Store(t.UnixNano())
	}
	return c.Conn.SetWriteDeadline(t)
}

func (c *blockingConn) Write(b []byte) (int, error) {
	c.first.Do(func() { close(c.blocked) })
	var expired <-chan time.Time
	if d := c.deadline.Load(); d != 0 {
		expired = time.After(time.Until(time.Unix(0, d)))
	}
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	case <-expired:
		return 0, os.ErrDeadlineExceeded
	}
}

func (c *blockingConn) Close() error {
	c.close.Do(func() { close(c.closed) })
	return c.Conn.Close()
}
