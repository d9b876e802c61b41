package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The usage of a streamed call comes in its last chunk (OpenAI) or its
// message_delta (Anthropic). An upstream exchange tied to the client's
// connection ended when the client hung up, before that chunk, and the
// call was settled at 0 or at its input alone: a client could stream any
// answer free by closing the connection before the end (issue 21). So
// the exchange runs on its own deadline, reads on after the client has
// gone, and without the final usage the reservation's worst case is
// charged.
const (
	// readOnLimit bounds what is read, and thrown away, for the usage
	// after the client has gone.
	readOnLimit = 64 << 20
	// maxBody bounds a non-streamed answer.
	maxBody = 64 << 20
	// settleTimeout bounds a settle that outlives the client and the
	// server's own shutdown.
	settleTimeout = 30 * time.Second
)

var errReadOnLimit = errors.New("read on past the limit after the client left")

// forward sends the call upstream and copies the answer back, reading
// usage on the way; it reports whether the call reached the model (then
// the call is charged). The exchange ends at deadline or when the server
// stops, never because the client left. An upstream error becomes a fixed
// error: its text may name the upstream, its account, or its key's prefix.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, p protocol, up Upstream, body []byte, stream bool, deadline time.Time) (u usage, reached bool) {
	ctx, cancel := context.WithDeadline(context.WithoutCancel(r.Context()), deadline)
	defer cancel()
	defer context.AfterFunc(g.calls.ctx, cancel)()
	// A client that stops reading would block a write, and the read of
	// the usage behind it, until the sweeper returned the reservation in
	// full. Not every ResponseWriter supports deadlines: then the server's
	// own shutdown (Serve closes every connection) is the bound.
	_ = http.NewResponseController(w).SetWriteDeadline(deadline)
	// Once the request is written the model may be working on it: a
	// failure after that is charged the worst case, one before it nothing.
	var sent atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		if i.Err == nil {
			sent.Store(true)
		}
	}})
	ureq, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(up.URL, "/")+p.path, bytes.NewReader(body))
	if err != nil {
		g.log.Printf("forward %s: the upstream URL is unusable", p.name) // err names it
		writeErr(w, http.StatusBadGateway, "upstream_error", "the model provider could not be reached")
		return u, false
	}
	ureq.Header.Set("Content-Type", "application/json")
	p.auth(ureq.Header, up.Key, r.Header)
	resp, err := g.client.Do(ureq)
	if err != nil {
		g.log.Printf("forward %s: upstream unreachable or no answer", p.name) // err names the upstream URL
		writeErr(w, http.StatusBadGateway, "upstream_error", "the model provider could not be reached")
		return u, sent.Load()
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		status, code := http.StatusBadGateway, "upstream_error"
		switch {
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == 529:
			status, code = http.StatusServiceUnavailable, "overloaded"
		case resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusRequestEntityTooLarge:
			status, code = http.StatusBadRequest, "invalid_request_error"
		}
		writeErr(w, status, code, fmt.Sprintf("the model provider refused the request (status %d)", resp.StatusCode))
		return u, false
	}
	ct := resp.Header.Get("Content-Type")
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	down := &downstream{w: w, r: r, rc: http.NewResponseController(w)}
	if !stream || !strings.HasPrefix(ct, "text/event-stream") {
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
		if err == nil && len(data) <= maxBody {
			p.usage(data, &u)
			u.Final = u.Seen // a whole answer's usage is its bill
		} else {
			g.log.Printf("forward %s: answer unreadable or over %d bytes", p.name, maxBody)
		}
		down.send(data[:min(len(data), maxBody)], true)
		return u, true
	}
	if err := relay(down, resp.Body, p, &u); err != nil {
		g.log.Printf("forward %s: stream ended early: %v", p.name, err)
	} else if p.endIsFinal && u.Seen {
		u.Final = true
	}
	return u, true
}

// relay copies an event stream to the client line by line, reading usage
// from its data lines. Once the client has gone it reads on, discarding,
// for at most readOnLimit bytes. nil means the stream ended cleanly.
func relay(down *downstream, body io.Reader, p protocol, u *usage) error {
	br := bufio.NewReaderSize(body, 64<<10)
	atStart := true
	var after int64
	for {
		line, err := br.ReadSlice('\n')
		if n := len(line); n > 0 {
			ends := line[n-1] == '\n'
			// Only a whole line is read for usage: a piece of a line
			// longer than the buffer could start with "data:" too.
			if atStart && (ends || err != nil) {
				if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
					p.usage(bytes.TrimSpace(d), u)
				}
			}
			atStart = ends
			if down.gone() {
				if after += int64(n); after > readOnLimit {
					return errReadOnLimit
				}
			} else {
				down.send(line, ends && len(bytes.TrimSpace(line)) == 0)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // a line longer than the buffer: relayed in pieces
		}
		if err != nil {
			down.flush()
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("relay: %w", err)
		}
	}
}

// downstream is the client's side of a call. After a failed write, or
// once the client's connection has ended, nothing more is sent.
type downstream struct {
	w    http.ResponseWriter
	r    *http.Request
	rc   *http.ResponseController
	lost bool
}

func (d *downstream) gone() bool {
	if !d.lost && d.r.Context().Err() != nil {
		d.lost = true
	}
	return d.lost
}

func (d *downstream) send(b []byte, flush bool) {
	if d.gone() {
		return
	}
	if _, err := d.w.Write(b); err != nil {
		d.lost = true
		return
	}
	if flush {
		d.flush()
	}
}

func (d *downstream) flush() {
	if d.gone() {
		return
	}
	if err := d.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		d.lost = true
	}
}

// calls counts the model calls in flight, so that a stopping server can
// end their upstream exchanges and wait for each to settle before its
// database closes. Its context ends when the server stops.
type calls struct {
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	n      int
	halted bool
	idle   chan struct{} // closed once halted with none in flight
}

func newCalls() *calls {
	ctx, cancel := context.WithCancel(context.Background())
	return &calls{ctx: ctx, cancel: cancel, idle: make(chan struct{})}
}

// begin counts a call in, unless the server is stopping.
func (c *calls) begin() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.halted {
		return false
	}
	c.n++
	return true
}

func (c *calls) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n--
	if c.halted && c.n == 0 {
		close(c.idle)
	}
}

// halt refuses new calls and ends every upstream exchange in flight.
func (c *calls) halt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.halted {
		return
	}
	c.halted = true
	c.cancel()
	if c.n == 0 {
		close(c.idle)
	}
}

// wait returns when every call in flight has settled, or ctx ends.
func (c *calls) wait(ctx context.Context) error {
	select {
	case <-c.idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for calls in flight: %w", ctx.Err())
	}
}
