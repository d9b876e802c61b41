package ui

import (
	"sync"

	"github.com/forkbomb/forkbomb/internal/event"
)

// Live is the server's subscriber to a race of this process
// (run.Options.Subscribers). It carries no event to the page: the record is
// the primary subscriber of the race's event.Fanout and has written each
// event before any queued subscriber gets it, so Live only says "the
// record grew" and which run it is; the server reads the lines back from
// events.jsonl. The page thus gets the record's redacted events, the same
// ones `forkbomb ui RUN` reads from another process's run.
type Live struct {
	mu    sync.Mutex
	runID string
	wake  chan struct{}
}

// NewLive makes a subscriber for one race.
func NewLive() *Live { return &Live{wake: make(chan struct{})} }

// Handle notes the run's id from run_start and wakes every stream. It
// never blocks the race.
func (l *Live) Handle(ev event.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d, ok := ev.Data.(event.RunStartData); ok && l.runID == "" {
		l.runID = d.ID
	}
	close(l.wake)
	l.wake = make(chan struct{})
	return nil
}

// RunID is the race's run, once it has started ("" before).
func (l *Live) RunID() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runID
}

// changed is closed at the next event.
func (l *Live) changed() <-chan struct{} {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.wake
}
