package ui

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/record"
)

// streamLines opens a stream like a browser would and collects its lines
// as they arrive, until the server ends it or the test does.
type streamLines struct {
	lines chan string
	done  chan struct{} // closed when the server ended the stream (EOF)
}

func openStream(t *testing.T, url, lastID string) *streamLines {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	s := &streamLines{lines: make(chan string, 1<<16), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			select {
			case s.lines <- sc.Text():
			default: // a flood: the count is over any bound already
			}
		}
	}()
	return s
}

// window reads what arrives within d (or until the server ends the
// stream): the non-empty lines and whether the stream ended.
func (s *streamLines) window(d time.Duration) (lines []string, ended bool) {
	stop := time.After(d)
	for {
		select {
		case l := <-s.lines:
			if l != "" {
				lines = append(lines, l)
			}
		case <-s.done:
			for {
				select {
				case l := <-s.lines:
					if l != "" {
						lines = append(lines, l)
					}
				default:
					return lines, true
				}
			}
		case <-stop:
			return lines, false
		}
	}
}

// TestStreamPastEnd: a client that asks for a position past the end of a
// finished run (?after= or Last-Event-ID, as a stale or hostile tab may)
// gets "end" at once and the stream closes, as at the end exactly; it used
// to be sent ": alive" in a loop that never slept. The lines a client
// receives in a fixed window are counted, not the time they take.
func TestStreamPastEnd(t *testing.T) {
	t.Parallel()
	runs := t.TempDir()
	evs := hostileEvents()
	id := writeRun(t, runs, evs)
	s := serve(t, Options{RunsDir: runs, Poll: 20 * time.Millisecond})
	url := base(s) + "api/run/" + id + "/stream"
	for _, c := range []struct{ name, query, lastID string }{
		{"after far past", "?after=1000000", ""},
		{"after one past", "?after=" + strconv.Itoa(len(evs)+1), ""},
		{"last-event-id past", "", "1000000"},
		{"at the end (control)", "?after=" + strconv.Itoa(len(evs)), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			st := openStream(t, url+c.query, c.lastID)
			// the window ends with the stream: 30 s is only for a
			// loaded machine's slow server, not a wait
			lines, ended := st.window(30 * time.Second)
			if !ended {
				t.Errorf("the stream of a finished run did not end: %d lines in the window, e.g. %q", len(lines), first(lines))
			}
			if len(lines) > 3 || !contains(lines, "event: end") {
				t.Errorf("got %d lines (want \"event: end\" and its data only): %q", len(lines), first(lines))
			}
		})
	}
}

// TestStreamLiveIdle: on a run still recording, a stream with nothing to
// send — at the end, or past it — sleeps on its wake and tick: within a
// fixed window it sends at most a few keep-alive lines, however often the
// race wakes it (here every millisecond) or the poll ticks (every 20ms);
// it used to send one per wake or tick. The control: an event appended
// afterwards still arrives on the stream that was at the end.
func TestStreamLiveIdle(t *testing.T) {
	t.Parallel()
	runs := t.TempDir()
	evs := hostileEvents()
	id := record.NewID()
	rec, err := record.Create(runs, record.Run{ID: id, Task: "t", Forks: 2, Started: evs[0].Time}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	for _, ev := range evs[:3] {
		rec.Handle(ev)
	}
	live := NewLive()
	s := serve(t, Options{RunsDir: runs, Poll: 20 * time.Millisecond, Live: live})
	url := base(s) + "api/run/" + id + "/stream"

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the race's events wake every stream
		for ctx.Err() == nil {
			live.Handle(event.Event{Data: event.ToolCallData{}})
			time.Sleep(time.Millisecond)
		}
	}()
	past := openStream(t, url+"?after=1000000", "")
	atEnd := openStream(t, url+"?after=3", "")
	var pastLines, endLines []string
	var pastEnded, endEnded bool
	done := make(chan struct{})
	go func() { defer close(done); pastLines, pastEnded = past.window(2 * time.Second) }()
	endLines, endEnded = atEnd.window(2 * time.Second)
	<-done
	for _, c := range []struct {
		name  string
		lines []string
		ended bool
	}{{"past the end", pastLines, pastEnded}, {"at the end", endLines, endEnded}} {
		if c.ended {
			t.Errorf("%s: the stream of a running run ended", c.name)
		}
		if len(c.lines) > 3 {
			t.Errorf("%s: %d lines in 2s on a run with nothing new (want at most 3 keep-alives): %q", c.name, len(c.lines), first(c.lines))
		}
	}
	// Control: the waiting stream is alive and gets what is appended.
	if err := rec.Handle(evs[3]); err != nil {
		t.Fatal(err)
	}
	if !atEnd.until("id: 4", time.Minute) {
		t.Fatal("control: the event appended never arrived on the waiting stream")
	}
}

// until reads until the line want arrives (true) or the stream ends or d
// passes (false).
func (s *streamLines) until(want string, d time.Duration) bool {
	stop := time.After(d)
	for {
		select {
		case l := <-s.lines:
			if l == want {
				return true
			}
		case <-s.done:
			return false
		case <-stop:
			return false
		}
	}
}

func contains(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

func first(lines []string) []string { return lines[:min(len(lines), 4)] }
