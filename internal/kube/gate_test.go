package kube

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// blockingWriter holds each Write until release is closed; finished is set
// once the write has its bytes.
type blockingWriter struct {
	started  chan struct{}
	release  chan struct{}
	buf      bytes.Buffer
	finished atomic.Bool
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	close(b.started)
	<-b.release
	n, err := b.buf.Write(p)
	b.finished.Store(true)
	return n, err
}

// blockedIn reports whether a goroutine is blocked in a select or a channel
// operation in the function fn, called from a function named by caller
// (as runtime.Stack names them).
func blockedIn(fn, caller string) bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf)) // the dump was cut: all of it
	}
	for _, g := range strings.Split(string(buf), "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		if (strings.Contains(head, "[select") || strings.Contains(head, "[chan send")) && strings.Contains(g, fn) && strings.Contains(g, caller) {
			return true
		}
	}
	return false
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
		var finishedFirst bool // whether the write had finished when close returned
		go func() { g.close(); finishedFirst = w.finished.Load(); close(closed) }()
		// close is seen waiting (blocked in its select) before the write goes on
		for deadline := time.Now().Add(time.Minute); !blockedIn("kube.(*gate).close(", "kube.TestGate.func"); time.Sleep(5 * time.Millisecond) {
			select {
			case <-closed:
				t.Fatal("close returned while a write was under way")
			default:
			}
			if time.Now().After(deadline) {
				t.Fatal("close never waited for the write under way")
			}
		}
		close(w.release)
		<-closed
		if !finishedFirst {
			t.Fatal("close returned before the write under way had finished")
		}
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
