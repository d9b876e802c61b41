package world

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// The wire between forkbomb and its world worker (worker.go): a header once, then per exec one
// request and one response, each a magic word followed by numbers and length-prefixed byte strings in a fixed order. The
// reader bounds every string before it allocates: the worker's answer is hostile data to the
// trusted side (the script it ran is the model's), and a length is never trusted to size a
// buffer past its cap.

const (
	headerMagic   = "FBWH"
	requestMagic  = "FBWQ"
	responseMagic = "FBWR"
	// maxMessage bounds the short strings of a response (a limit's or a failure's message).
	maxMessage = 64 << 10
	// maxScript bounds a script (a model's command is far shorter).
	maxScript = 16 << 20
	// maxFingerprint bounds the header's fingerprint.
	maxFingerprint = 256
)

// workHeader is what the trusted side tells a worker before anything else; the worker reads
// it before it confines itself, and runs nothing when Fingerprint is not its own build's.
type workHeader struct {
	Fingerprint string
	Data        int64 // the worker's RLIMIT_DATA
}

// workRequest is one exec for the worker.
type workRequest struct {
	Limits Limits
	// Bare runs the interpreter with none of the world's hooks, over the host as
	// mvdan.cc/sh's defaults see it: only tests ask for it, to show the kernel layer alone
	// stops what the hooks would have missed.
	Bare   bool
	Script string
	Stdin  []byte
	World  []byte // the encoded world
}

// workResponse is how it ended; World is the encoded world after it (none after a limit or a
// failure).
type workResponse struct {
	Result
	World  []byte
	Retire bool // the worker leaves after this answer
}

type wireWriter struct {
	w   *bufio.Writer
	err error
}

func (w *wireWriter) num(v int64) {
	if w.err == nil {
		w.err = binary.Write(w.w, binary.LittleEndian, v)
	}
}

func (w *wireWriter) bytes(b []byte) {
	w.num(int64(len(b)))
	if w.err == nil {
		_, w.err = w.w.Write(b)
	}
}

func (w *wireWriter) flush() error {
	if w.err == nil {
		w.err = w.w.Flush()
	}
	return w.err
}

type wireReader struct {
	r   *bufio.Reader
	err error
}

func (r *wireReader) magic(want string) {
	b := make([]byte, len(want))
	if _, r.err = io.ReadFull(r.r, b); r.err == nil && string(b) != want {
		r.err = errors.New("bad magic")
	}
}

func (r *wireReader) num() int64 {
	var v int64
	if r.err == nil {
		r.err = binary.Read(r.r, binary.LittleEndian, &v)
	}
	return v
}

// bytes reads one string of at most max bytes; it grows its buffer as data arrives, doubling
// up to the length, so a length alone allocates little (at most wireChunk) and a megabyte is
// not copied a score of times.
func (r *wireReader) bytes(max int64) []byte {
	n := r.num()
	if r.err != nil {
		return nil
	}
	if n < 0 || n > max {
		r.err = fmt.Errorf("a field of %d bytes (at most %d)", n, max)
		return nil
	}
	b := make([]byte, 0, min(n, wireChunk))
	for int64(len(b)) < n {
		if len(b) == cap(b) {
			b = append(make([]byte, 0, min(n, 2*int64(cap(b)))), b...)
		}
		m, err := r.r.Read(b[len(b):min(int64(cap(b)), n)])
		b = b[:len(b)+m]
		if err != nil && int64(len(b)) < n {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			r.err = err
			return nil
		}
	}
	return b
}

// wireChunk is what a field's length alone may make bytes allocate.
const wireChunk = 64 << 10

func writeHeader(w *bufio.Writer, h workHeader) error {
	ww := &wireWriter{w: w}
	if _, err := w.WriteString(headerMagic); err != nil {
		return err
	}
	ww.bytes([]byte(h.Fingerprint))
	ww.num(h.Data)
	return ww.flush()
}

func readHeader(r *bufio.Reader) (workHeader, error) {
	rr := &wireReader{r: r}
	rr.magic(headerMagic)
	h := workHeader{Fingerprint: string(rr.bytes(maxFingerprint)), Data: rr.num()}
	if rr.err != nil {
		return h, fmt.Errorf("read header: %w", rr.err)
	}
	return h, nil
}

func writeRequest(w *bufio.Writer, q *workRequest) error {
	ww := &wireWriter{w: w}
	if _, err := w.WriteString(requestMagic); err != nil {
		return err
	}
	l := q.Limits
	ww.num(int64(l.MaxCommands))
	ww.num(int64(l.WallTime))
	ww.num(l.MaxOutput)
	ww.num(l.MaxSize)
	var flags int64
	if q.Bare {
		flags = 1
	}
	ww.num(flags)
	ww.bytes([]byte(q.Script))
	ww.bytes(q.Stdin)
	ww.bytes(q.World)
	return ww.flush()
}

// readRequest reads one request; io.EOF before its first byte means no more.
func readRequest(r *bufio.Reader) (*workRequest, error) {
	if _, err := r.Peek(1); err != nil {
		return nil, err
	}
	rr := &wireReader{r: r}
	rr.magic(requestMagic)
	q := &workRequest{}
	q.Limits.MaxCommands = int(rr.num())
	q.Limits.WallTime = time.Duration(rr.num())
	q.Limits.MaxOutput = rr.num()
	q.Limits.MaxSize = rr.num()
	q.Bare = rr.num()&1 != 0
	q.Script = string(rr.bytes(maxScript))
	q.Stdin = rr.bytes(maxFileBytes)
	q.World = rr.bytes(maxFileBytes)
	if rr.err != nil {
		return nil, fmt.Errorf("read request: %w", rr.err)
	}
	return q, nil
}

func writeResponse(w *bufio.Writer, p *workResponse) error {
	ww := &wireWriter{w: w}
	if _, err := w.WriteString(responseMagic); err != nil {
		return err
	}
	ww.num(int64(p.Status))
	var flags int64
	if p.Retire {
		flags = 1
	}
	ww.num(flags)
	ww.bytes([]byte(p.Limit))
	ww.bytes([]byte(p.Failed))
	ww.bytes(p.Stdout)
	ww.bytes(p.Stderr)
	ww.bytes(p.World)
	return ww.flush()
}

// readResponse reads the worker's answer to a request with limits l: output within the
// limit (and the room for its message), a world within the decoder's cap.
func readResponse(r *bufio.Reader, l Limits) (*workResponse, error) {
	rr := &wireReader{r: r}
	rr.magic(responseMagic)
	p := &workResponse{}
	p.Status = int(rr.num())
	p.Retire = rr.num()&1 != 0
	p.Limit = string(rr.bytes(maxMessage))
	p.Failed = string(rr.bytes(maxMessage))
	p.Stdout = rr.bytes(l.MaxOutput + maxMessage)
	p.Stderr = rr.bytes(l.MaxOutput + maxMessage)
	p.World = rr.bytes(maxFileBytes)
	if rr.err != nil {
		return nil, fmt.Errorf("read response: %w", rr.err)
	}
	if p.Status < 0 || p.Status > 255 {
		return nil, fmt.Errorf("read response: status %d", p.Status)
	}
	return p, nil
}
