package sandbox

import (
	"io"
	"os"
	"sync"
	"time"
)

// outputLimit caps the bytes copied from the command's stdout and stderr
// together. The cap is enforced while streaming: the byte that would exceed
// it is never written, and the command is killed at once.
type outputLimit struct {
	max      int64 // 0: no cap
	onExceed func()

	mu   sync.Mutex
	n    int64
	over bool
}

func (l *outputLimit) copy(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			l.write(dst, buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func (l *outputLimit) write(dst io.Writer, p []byte) {
	l.mu.Lock()
	if l.over {
		l.mu.Unlock()
		return // keep draining so the command never blocks on a full pipe
	}
	fire := false
	if l.max > 0 && l.n+int64(len(p)) > l.max {
		p = p[:l.max-l.n]
		l.over, fire = true, true
	}
	l.n += int64(len(p))
	_, _ = dst.Write(p)
	l.mu.Unlock()
	if fire && l.onExceed != nil {
		l.onExceed()
	}
}

func (l *outputLimit) exceeded() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.over
}

// waitCopies waits for the output copies to drain, but not for ever: every
// process that could hold the pipes' write ends should be dead, and should
// one have escaped (it cannot under a pid namespace; see the macOS row of
// docs/SECURITY.md), closing the read ends stops the copies rather than
// waiting for it.
func waitCopies(copies *sync.WaitGroup, readEnds []*os.File) {
	copied := make(chan struct{})
	go func() { copies.Wait(); close(copied) }()
	select {
	case <-copied:
	case <-time.After(5 * time.Second):
		for _, f := range readEnds {
			f.Close()
		}
		<-copied
	}
}
