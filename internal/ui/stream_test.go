package ui

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/record"
)

// sse reads a stream's events until "end" (or max events), bounded.
func sse(t *testing.T, url, lastID string, max int) (ids []int, evs []shown, ended bool) {
	t.Helper()
	return sseEach(t, url, lastID, max, nil)
}

// sseEach is sse, calling each (if not nil) with every id as it is read.
func sseEach(t *testing.T, url, lastID string, max int, each func(id int)) (ids []int, evs []shown, ended bool) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	client := &http.Client{Timeout: time.Minute}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 4<<20)
	kind := ""
	for sc.Scan() && len(ids) < max {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			kind = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id: "):
			n, _ := strconv.Atoi(strings.TrimPrefix(line, "id: "))
			ids = append(ids, n)
			if each != nil {
				each(n)
			}
		case strings.HasPrefix(line, "data: ") && kind == "":
			var ev shown
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil {
				t.Fatalf("data %q: %v", line, err)
			}
			evs = append(evs, ev)
		case line == "" && kind == "end":
			return ids, evs, true
		case line == "":
			kind = ""
		}
	}
	return ids, evs, false
}

// TestStreamResume: a stream sends every event once, numbered as the
// record's lines; a reconnect with Last-Event-ID gets exactly the rest;
// a finished run's stream ends.
func TestStreamResume(t *testing.T) {
	t.Parallel()
	runs := t.TempDir()
	evs := hostileEvents()
	id := writeRun(t, runs, evs)
	s := serve(t, Options{RunsDir: runs})
	url := base(s) + "api/run/" + id + "/stream"
	ids, all, ended := sse(t, url, "", 1000)
	if !ended || len(ids) != len(evs) || ids[0] != 1 || ids[len(ids)-1] != len(evs) {
		t.Fatalf("first stream: ended %v, ids %v (want 1..%d)", ended, ids, len(evs))
	}
	if all[5].Type != "tool_result" || !all[5].Truncated || len(all[5].Data["output"].(string)) != MaxString {
		t.Errorf("a big output is not cut to %d in the stream: %+v", MaxString, all[5].Truncated)
	}
	for _, last := range []int{0, 7, len(evs) - 1, len(evs)} {
		t.Run(fmt.Sprint("after ", last), func(t *testing.T) {
			ids, _, ended := sse(t, url, strconv.Itoa(last), 1000)
			if !ended || len(ids) != len(evs)-last || (len(ids) > 0 && ids[0] != last+1) {
				t.Errorf("resumed after %d: ids %v ended %v", last, ids, ended)
			}
		})
	}
	// The whole event, on expand, holds what the stream cut.
	resp, err := http.Get(base(s) + "api/run/" + id + "/event/6")
	if err != nil {
		t.Fatal(err)
	}
	var full shown
	json.NewDecoder(resp.Body).Decode(&full)
	resp.Body.Close()
	if out, _ := full.Data["output"].(string); !strings.HasSuffix(out, "THE-END-OF-BIG-OUTPUT") || full.Truncated {
		t.Errorf("expand: %d bytes, truncated %v", len(out), full.Truncated)
	}
}

// TestHostileLog: an events.jsonl with a line over MaxLine, a line that is
// not JSON, and a line still being written is read within bounds: the big
// line becomes an "oversize" event without being read, the bad one
// "unreadable", and the partial line is not shown until it ends.
func TestHostileLog(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "events.jsonl")
	huge := `{"type":"tool_result","data":{"output":"` + strings.Repeat("A", MaxLine+10) + `"}}`
	content := `{"type":"run_start"}` + "\n" + huge + "\n" + "not json {\n" + `{"type":"fork_start","fork":0}` + "\n" + `{"type":"fork_e`
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	l := &eventLog{path: path}
	n, err := l.Len()
	if err != nil || n != 4 {
		t.Fatalf("Len = %d, %v; want 4 complete lines", n, err)
	}
	raws, err := l.Get(1, 10)
	if err != nil || len(raws) != 4 {
		t.Fatalf("Get: %d, %v", len(raws), err)
	}
	want := []string{"run_start", "oversize", "unreadable", "fork_start"}
	for i, raw := range raws {
		if got := show(i+1, raw, MaxString).Type; got != want[i] {
			t.Errorf("event %d: %s, want %s", i+1, got, want[i])
		}
		if len(raw) > MaxLine {
			t.Errorf("event %d: %d bytes read", i+1, len(raw))
		}
	}
	// The partial line ends: now it is an event.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`xit","fork":0}` + "\n")
	f.Close()
	if n, _ := l.Len(); n != 5 {
		t.Fatalf("after the line ended: %d events", n)
	}
	raws, _ = l.Get(5, 6)
	if show(5, raws[0], 0).Type != "fork_exit" {
		t.Errorf("event 5: %s", raws[0])
	}
	// A link at the name is not followed.
	link := filepath.Join(t.TempDir(), "events.jsonl")
	os.Symlink(path, link)
	if n, err := (&eventLog{path: link}).Len(); err == nil || n != 0 {
		t.Errorf("a symlinked events.jsonl was read: %d events, %v", n, err)
	}
}

// TestStreamTails: the stream of a run that is still recording (no Live:
// as `forkbomb ui RUN` sees a run of another process) sends the lines
// appended after it connected, and ends once the run has ended.
func TestStreamTails(t *testing.T) {
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
	s := serve(t, Options{RunsDir: runs, Poll: 20 * time.Millisecond})
	type res struct {
		ids   []int
		ended bool
	}
	got := make(chan res, 1)
	read := make(chan int, 1000)
	go func() {
		var r res
		defer func() { got <- r }() // also when sse fails the test
		r.ids, _, r.ended = sseEach(t, base(s)+"api/run/"+id+"/stream", "", 1000, func(id int) { read <- id })
	}()
	// waitFor waits until the stream has sent event n (and those before it).
	waitFor := func(n int) {
		t.Helper()
		for {
			select {
			case id := <-read:
				if id >= n {
					return
				}
			case r := <-got:
				t.Fatalf("the stream ended before event %d: %v", n, r)
			case <-time.After(time.Minute):
				t.Fatalf("no event %d from the stream within a minute", n)
			}
		}
	}
	// The stream has sent what was recorded when it connected, and now
	// waits; these are appended then (it polls the file; nothing wakes it).
	waitFor(3)
	for _, ev := range evs[3:] {
		if err := rec.Handle(ev); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(len(evs))
	// The run has not ended: a stream that ended now would be wrong (a
	// window for it to show, not a wait for anything).
	select {
	case r := <-got:
		t.Fatalf("the stream of a running run ended early: %v", r)
	case <-time.After(200 * time.Millisecond):
	}
	rec.Update(func(r *record.Run) { r.Status = event.RunWon })
	rec.Close()
	r := <-got
	if !r.ended || len(r.ids) != len(evs) || r.ids[len(r.ids)-1] != len(evs) {
		t.Fatalf("tail: ended %v, %d events (want %d)", r.ended, len(r.ids), len(evs))
	}
}
