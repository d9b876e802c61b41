package event

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// recorder is a subscriber that keeps what it gets; fail makes it fail on
// the event of that number (1-based), block holds it until released.
type recorder struct {
	mu    sync.Mutex
	got   []Event
	fail  int
	block chan struct{}
}

func (r *recorder) Handle(ev Event) error {
	if r.block != nil {
		<-r.block
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, ev)
	if len(r.got) == r.fail {
		return fmt.Errorf("subscriber gone at event %d", r.fail)
	}
	return nil
}

func (r *recorder) events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.got...)
}

// emitForks emits n events for each of forks forks from one goroutine per
// fork, each event numbered by its fork in its data's Turn.
func emitForks(t *testing.T, s Sink, forks, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for f := range forks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				s.Emit(Event{Fork: f, Data: ToolCallData{Turn: i}})
			}
		}()
	}
	wg.Wait()
}

// inOrder checks that every fork's events arrived, all of them, in order.
func inOrder(t *testing.T, who string, evs []Event, forks, n int) {
	t.Helper()
	next := make([]int, forks)
	for _, ev := range evs {
		if ev.Time.IsZero() {
			t.Errorf("%s: an event without a time", who)
		}
		if i := ev.Data.(ToolCallData).Turn; i != next[ev.Fork] {
			t.Fatalf("%s: fork %d event %d arrived when %d was due", who, ev.Fork, i, next[ev.Fork])
		}
		next[ev.Fork]++
	}
	for f, got := range next {
		if got != n {
			t.Errorf("%s: fork %d: %d events of %d", who, f, got, n)
		}
	}
}

func TestFanout(t *testing.T) {
	t.Parallel()
	const forks, n = 4, 200
	tests := []struct {
		name  string
		other *recorder
		// the other subscriber's view: whole, or cut at its failure
		wantOther int
	}{
		{"fast subscriber", &recorder{}, forks * n},
		{"slow subscriber", &recorder{block: make(chan struct{})}, forks * n},
		{"failing subscriber", &recorder{fail: 10}, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			primary := &recorder{}
			f := NewFanout(primary, tt.other)
			emitForks(t, f, forks, n)
			// The record has every event before a slow subscriber has
			// taken its first: it never waits for one.
			inOrder(t, "record", primary.events(), forks, n)
			if tt.other.block != nil {
				if got := len(tt.other.events()); got != 0 {
					t.Errorf("the blocked subscriber handled %d events", got)
				}
				close(tt.other.block)
			}
			if err := f.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			got := tt.other.events()
			if len(got) != tt.wantOther {
				t.Errorf("the subscriber got %d events, want %d", len(got), tt.wantOther)
			}
			if tt.wantOther == forks*n {
				inOrder(t, "subscriber", got, forks, n)
			}
			detached := f.Detached()
			if failing := tt.other.fail > 0; failing != (len(detached) == 1) {
				t.Errorf("detached %v", detached)
			}
			for _, err := range detached {
				if !errors.Is(err, ErrSubscriber) {
					t.Errorf("a detached subscriber's error does not wrap ErrSubscriber: %v", err)
				}
			}
		})
	}
}

// TestFanoutPrimaryError: the record's write error goes back to the
// emitter at once and is kept; the other subscribers still get the event.
func TestFanoutPrimaryError(t *testing.T) {
	t.Parallel()
	primary, other := &recorder{fail: 2}, &recorder{}
	f := NewFanout(primary, other)
	for i := range 3 {
		err := f.Emit(Event{Fork: RunLevel, Data: ErrorData{Error: fmt.Sprint(i)}})
		if (err != nil) != (i == 1) {
			t.Errorf("event %d: error %v", i, err)
		}
	}
	if err := f.Close(); err == nil || f.Err() == nil {
		t.Errorf("Close and Err lost the primary's error: %v", err)
	}
	if got := len(other.events()); got != 3 {
		t.Errorf("the other subscriber got %d events of 3", got)
	}
	if err := f.Emit(Event{Data: RunEndData{}}); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "run_end") {
		t.Errorf("emit after Close: %v", err)
	}
}
