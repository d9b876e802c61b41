package event

import (
	"fmt"
	"sync"
	"time"
)

// Sink takes the events of a race. Emit returns an error only when the
// event could not be kept where it must be (the record): the race ends on
// it rather than go on with a record that has a hole.
type Sink interface {
	Emit(Event) error
}

// Subscriber gets events from a Fanout, one at a time, in the order they
// were emitted.
type Subscriber interface {
	Handle(Event) error
}

// SubscriberFunc is a function as a Subscriber.
type SubscriberFunc func(Event) error

// Handle calls f.
func (f SubscriberFunc) Handle(ev Event) error { return f(ev) }

// Fanout is a Sink that hands each event to one primary subscriber — the
// record — in the emitter's goroutine, and queues it for every other
// subscriber, each drained by a goroutine of its own. So the record gets
// every event, in order, and its write error goes back to the emitter;
// a slow subscriber (a terminal nobody reads, a web view on a slow link)
// delays no one, and one that fails is detached without touching the
// record. One lock orders the primary's writes and the queues alike: every
// subscriber sees the same order, so a fork's events stay in order
// everywhere.
type Fanout struct {
	mu      sync.Mutex
	primary Subscriber
	err     error // the primary's first error
	closed  bool
	queues  []*queue
	wg      sync.WaitGroup
	now     func() time.Time
}

// NewFanout starts the fan-out; primary may be nil. Close it to drain the
// queues.
func NewFanout(primary Subscriber, others ...Subscriber) *Fanout {
	f := &Fanout{primary: primary, now: func() time.Time { return time.Now().UTC() }}
	for _, s := range others {
		q := &queue{sub: s}
		q.cond = sync.NewCond(&q.mu)
		f.queues = append(f.queues, q)
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			q.drain()
		}()
	}
	return f
}

// Emit delivers ev to the primary subscriber and queues it for the others.
// It returns the primary's error for this event, if any (and ErrClosed
// after Close).
func (f *Fanout) Emit(ev Event) error {
	if ev.Time.IsZero() {
		ev.Time = f.now()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return fmt.Errorf("emit %s: %w", ev.Kind(), ErrClosed)
	}
	var err error
	if f.primary != nil {
		if err = f.primary.Handle(ev); err != nil && f.err == nil {
			f.err = err
		}
	}
	for _, q := range f.queues {
		q.push(ev)
	}
	return err
}

// Err is the primary subscriber's first error.
func (f *Fanout) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// Close stops taking events, waits until every subscriber has handled
// every event queued for it (or was detached), and returns the primary's
// first error. The others' errors are in Detached.
func (f *Fanout) Close() error {
	f.mu.Lock()
	if !f.closed {
		f.closed = true
		for _, q := range f.queues {
			q.close()
		}
	}
	f.mu.Unlock()
	f.wg.Wait()
	return f.Err()
}

// Detached returns the errors of the subscribers that failed (each wraps
// ErrSubscriber). Call it after Close for the full list.
func (f *Fanout) Detached() []error {
	var out []error
	for _, q := range f.queues {
		q.mu.Lock()
		if q.err != nil {
			out = append(out, q.err)
		}
		q.mu.Unlock()
	}
	return out
}

// queue is one subscriber's backlog. It is unbounded: a race's events are
// few enough to hold, and dropping one would give that subscriber a false
// picture (a fork that never ends).
type queue struct {
	sub    Subscriber
	mu     sync.Mutex
	cond   *sync.Cond
	events []Event
	closed bool
	err    error
}

func (q *queue) push(ev Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err == nil {
		q.events = append(q.events, ev)
		q.cond.Signal()
	}
}

func (q *queue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Signal()
}

// drain hands the events to the subscriber until the queue is closed and
// empty, or the subscriber fails.
func (q *queue) drain() {
	for {
		q.mu.Lock()
		for len(q.events) == 0 && !q.closed {
			q.cond.Wait()
		}
		if len(q.events) == 0 {
			q.mu.Unlock()
			return
		}
		ev := q.events[0]
		q.events[0] = Event{}
		q.events = q.events[1:]
		q.mu.Unlock()
		if err := q.sub.Handle(ev); err != nil {
			q.mu.Lock()
			q.err = fmt.Errorf("%w: %w", ErrSubscriber, err)
			q.events = nil
			q.mu.Unlock()
			return
		}
	}
}
