package sandbox

import (
	"errors"
	"sync"
	"syscall"
	"time"
)

// Yield is a lowered CPU priority that running sandboxes share and their
// caller switches on and off: while anyone holds it (Hold), every running
// sandbox whose Policy.Yield it is runs Policy.Nice steps below the
// caller; when no one does, at the caller's priority again. A race holds
// it while its judge has work, so the agents give way to the judge then
// and only then: against the rest of the machine they keep their share.
//
// It lowers what the caller can raise again, on Linux: the sandbox's own
// cgroup's CPU weight where the CPU controller can be had, else its
// session's scheduling group (autogroup). The nice of each process is not
// touched, as nothing raises that again without CAP_SYS_NICE. Where
// neither group applies, a Yield does nothing; on macOS it does nothing.
//
// The zero value is ready to use.
type Yield struct {
	mu       sync.Mutex
	held     int
	members  map[yielder]struct{}
	pending  map[yielder]struct{} // a write the kernel asked to be tried again
	retrying bool
}

// yielder is one running sandbox's lowerable group.
type yielder interface {
	// set lowers the group (or raises it back); syscall.EAGAIN: try again
	// later.
	set(lowered bool) error
	close()
}

// Hold lowers the Yield's sandboxes until release is called (each Hold
// its own release; release more than once is harmless).
func (y *Yield) Hold() (release func()) {
	y.mu.Lock()
	y.held++
	if y.held == 1 {
		y.applyLocked()
	}
	y.mu.Unlock()
	return sync.OnceFunc(func() {
		y.mu.Lock()
		y.held--
		if y.held == 0 {
			y.applyLocked()
		}
		y.mu.Unlock()
	})
}

// join adds a started sandbox's group, set at once to the Yield's state;
// leave takes it out and closes it.
func (y *Yield) join(m yielder) (leave func()) {
	y.mu.Lock()
	if y.members == nil {
		y.members = map[yielder]struct{}{}
	}
	y.members[m] = struct{}{}
	y.setLocked(m)
	y.mu.Unlock()
	return sync.OnceFunc(func() {
		y.mu.Lock()
		delete(y.members, m)
		delete(y.pending, m)
		y.mu.Unlock()
		m.close()
	})
}

func (y *Yield) applyLocked() {
	for m := range y.members {
		y.setLocked(m)
	}
}

// setLocked sets m to the Yield's state; a write the kernel refuses for
// now (an unprivileged autogroup write, taken only every so often) is
// tried again in the background, with the state of that moment.
func (y *Yield) setLocked(m yielder) {
	if len(y.pending) > 0 {
		// writes are waiting already: this one waits its turn
		y.pending[m] = struct{}{}
		return
	}
	if err := m.set(y.held > 0); errors.Is(err, syscall.EAGAIN) {
		if y.pending == nil {
			y.pending = map[yielder]struct{}{}
		}
		y.pending[m] = struct{}{}
		if !y.retrying {
			y.retrying = true
			go y.retry()
		}
	}
}

func (y *Yield) retry() {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for range t.C {
		y.mu.Lock()
		for m := range y.pending {
			if err := m.set(y.held > 0); errors.Is(err, syscall.EAGAIN) {
				break
			}
			delete(y.pending, m)
		}
		if len(y.pending) == 0 {
			y.retrying = false
			y.mu.Unlock()
			return
		}
		y.mu.Unlock()
	}
}
