package kube

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"
)

// blockingWriter holds each Write until release is closed.
type blockingWriter struct {
	started chan struct{}
	release chan struct{}
	buf     bytes.Buffer
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	close(b.started)
	<-b.release
	return b.buf.Write(p)
}

// The gate orders client-go's late output copies before the exec's return
// (the race detector saw one write a fork's log as the race wrote it) and
// drops what comes after.
func TestGate(t *testing.T) {
	t.Parallel()
	t.Run("a write under way finishes before close returns", func(t *testing.T) {
		t.Parallel()
		g := newGate()
		w := &blockingWriter{started: make(chan struct{}), release: make(chan struct{})}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := g.wrap(w).Write([]byte("late")); err != nil {
				t.Errorf("write under way: %v", err)
			}
		}()
		<-w.started
		closed := make(chan struct{})
		go func() { g.close(); close(closed) }()
		select {
		case <-closed:
			t.Fatal("close returned while a write was under way")
		case <-time.After(50 * time.Millisecond):
		}
		close(w.release)
		<-closed
		// close has returned: the write is complete and its bytes are ours
		// to read without a lock.
		if got := w.buf.String(); got != "late" {
			t.Fatalf("buffer after close = %q, want the write that was under way", got)
		}
		wg.Wait()
	})
	t.Run("writes after close are dropped", func(t *testing.T) {
		t.Parallel()
		g := newGate()
		var buf bytes.Buffer
		w := g.wrap(&buf)
		if _, err := w.Write([]byte("before ")); err != nil {
			t.Fatal(err)
		}
		g.close()
		if _, err := w.Write([]byte("after")); !errors.Is(err, errGateClosed) {
			t.Fatalf("write after close: err %v, want errGateClosed", err)
		}
		if got := buf.String(); got != "before " {
			t.Fatalf("buffer = %q, want only the write before close", got)
		}
	})
}
