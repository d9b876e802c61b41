package world

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestWireBytes: a field reads back whole at every size around the reader's first buffer and
// its doublings; a field cut short is io.ErrUnexpectedEOF; a length past the bound is refused
// before any of it is read.
func TestWireBytes(t *testing.T) {
	t.Parallel()
	enc := func(fields ...[]byte) *bufio.Reader {
		var buf bytes.Buffer
		w := wireWriter{w: bufio.NewWriter(&buf)}
		for _, f := range fields {
			w.bytes(f)
		}
		if err := w.flush(); err != nil {
			t.Fatal(err)
		}
		return bufio.NewReader(&buf)
	}
	for _, n := range []int{0, 1, wireChunk - 1, wireChunk, wireChunk + 1, 5*wireChunk + 7} {
		f := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
		r := wireReader{r: enc(f, []byte("next"))}
		if got := r.bytes(1 << 30); r.err != nil || !bytes.Equal(got, f) {
			t.Fatalf("%d bytes: read %d, %v", n, len(got), r.err)
		}
		if got := r.bytes(10); r.err != nil || string(got) != "next" {
			t.Fatalf("the field after %d bytes: %q, %v", n, got, r.err)
		}
	}
	full := enc(bytes.Repeat([]byte("x"), 3*wireChunk))
	cut, _ := io.ReadAll(full)
	r := wireReader{r: bufio.NewReader(bytes.NewReader(cut[:len(cut)-1]))}
	if got := r.bytes(1 << 30); !errors.Is(r.err, io.ErrUnexpectedEOF) || got != nil {
		t.Errorf("a field cut short: %d bytes, %v", len(got), r.err)
	}
	r = wireReader{r: enc(make([]byte, 11))}
	if got := r.bytes(10); r.err == nil || !strings.Contains(r.err.Error(), "at most 10") || got != nil {
		t.Errorf("a field past its bound: %d bytes, %v", len(got), r.err)
	}
}
