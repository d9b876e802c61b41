package ui

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/home"
	"github.com/forkbomb/forkbomb/internal/record"
)

//go:embed assets/index.html assets/app.js assets/app.css
var assets embed.FS

// streamWrite bounds each write of a stream: a browser that stops reading
// does not hold a goroutine forever.
const streamWrite = 30 * time.Second

// keepAlive is the longest a stream stays silent: a comment line then
// tells proxies and the browser the connection lives. It is sent only
// after this much silence, never per wake: a race's every event wakes
// every stream.
const keepAlive = 15 * time.Second

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", asset("index.html", "text/html; charset=utf-8"))
	mux.HandleFunc("GET /app.js", asset("app.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /app.css", asset("app.css", "text/css; charset=utf-8"))
	// The export's bundle; served empty, the page then asks the server.
	mux.HandleFunc("GET /data.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	})
	mux.HandleFunc("GET /api/live", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"run": s.o.Live.RunID(), "live": s.o.Live != nil})
	})
	mux.HandleFunc("GET /api/runs", s.runs)
	mux.HandleFunc("GET /api/run/{id}", s.run)
	mux.HandleFunc("GET /api/run/{id}/events", s.events)
	mux.HandleFunc("GET /api/run/{id}/event/{n}", s.event)
	mux.HandleFunc("GET /api/run/{id}/patch/{which}", s.patch)
	mux.HandleFunc("GET /api/run/{id}/stream", s.stream)
	mux.HandleFunc("GET /api/board", s.board)
	return mux
}

func asset(name, typ string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		data, err := assets.ReadFile("assets/" + name)
		if err != nil {
			http.Error(w, "no asset", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", typ)
		w.Write(data)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var idErr *home.IDError
	switch {
	case errors.As(err, &idErr):
		code = http.StatusBadRequest
	case errors.Is(err, os.ErrNotExist):
		code = http.StatusNotFound
	}
	http.Error(w, err.Error(), code)
}

// loadRun reads run.json, bounded; a run that says "running" while no
// process holds its lock reads as interrupted (record.RunLiveness).
func loadRun(runsDir, id string) (*record.Run, error) {
	dir, err := home.Join(runsDir, "run", id)
	if err != nil {
		return nil, err
	}
	data, err := readBounded(filepath.Join(dir, "run.json"), MaxFileRead)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	var r record.Run
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("run %s: corrupt run.json: %w", id, err)
	}
	if r.Status == event.RunRunning && record.RunLiveness(dir) == record.Gone {
		r.Status = event.RunInterrupted
	}
	return &r, nil
}

func (s *Server) runs(w http.ResponseWriter, r *http.Request) {
	entries, err := os.ReadDir(s.o.RunsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		fail(w, err)
		return
	}
	out := []*record.Run{}
	for i := len(entries) - 1; i >= 0 && len(out) < 1000; i-- {
		e := entries[i]
		if !e.IsDir() || home.ValidateID("run", e.Name()) != nil {
			continue
		}
		if run, err := loadRun(s.o.RunsDir, e.Name()); err == nil {
			out = append(out, run)
		}
	}
	writeJSON(w, out)
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	run, err := loadRun(s.o.RunsDir, r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, run)
}

// events is a page of a run's events: ?after=N&limit=M, strings cut.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	l, _, err := s.log(r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	after, _ := strconv.Atoi(r.URL.Query().Get("after"))
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	if limit <= 0 || limit > MaxPage {
		limit = MaxPage
	}
	n, err := l.Len()
	if err != nil {
		fail(w, err)
		return
	}
	raws, err := l.Get(after+1, after+1+limit)
	if err != nil {
		fail(w, err)
		return
	}
	evs := make([]shown, len(raws))
	for i, raw := range raws {
		evs[i] = show(after+1+i, raw, MaxString)
	}
	writeJSON(w, map[string]any{"total": n, "events": evs})
}

// event is one whole event (what "expand" shows), bounded by MaxLine.
func (s *Server) event(w http.ResponseWriter, r *http.Request) {
	l, _, err := s.log(r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 1 {
		http.Error(w, "bad event number", http.StatusBadRequest)
		return
	}
	if _, err := l.Len(); err != nil {
		fail(w, err)
		return
	}
	raws, err := l.Get(n, n+1)
	if err != nil || len(raws) == 0 {
		http.Error(w, "no such event", http.StatusNotFound)
		return
	}
	writeJSON(w, show(n, raws[0], 0))
}

// patch is a fork's patch (which: its number) or the winner's, as plain
// text; the page puts it in the DOM as text.
func (s *Server) patch(w http.ResponseWriter, r *http.Request) {
	dir, err := home.Join(s.o.RunsDir, "run", r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return
	}
	path, ok := patchPath(dir, r.PathValue("which"))
	if !ok {
		http.Error(w, "bad patch name", http.StatusBadRequest)
		return
	}
	data, err := readBounded(path, MaxFileRead)
	if err != nil {
		fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write(data)
}

func patchPath(dir, which string) (string, bool) {
	if which == "winner" {
		return filepath.Join(dir, "winner.patch"), true
	}
	n, err := strconv.Atoi(which)
	if err != nil || n < 0 || strconv.Itoa(n) != which {
		return "", false
	}
	return filepath.Join(dir, "forks", which, "patch"), true
}

// stream sends a run's events as Server-Sent Events from the one after
// Last-Event-ID (or ?after=), as the record grows, and "end" once the run
// has ended and every line is sent.
//
// A position at or past the record's end is the same case: nothing to
// send. A finished run then ends the stream at once; a running one waits
// on its wake or tick and says ": alive" only after keepAlive of silence.
// Before, a position past the end of a finished run never matched "every
// line sent" and the loop wrote keep-alives without sleeping (a third of
// a core per client; issue 21 §6).
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	l, _, err := s.log(id)
	if err != nil {
		fail(w, err)
		return
	}
	after, _ := strconv.Atoi(r.URL.Query().Get("after"))
	if h := r.Header.Get("Last-Event-ID"); h != "" {
		after, _ = strconv.Atoi(h)
	}
	after = max(after, 0)
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return
	}
	tick := time.NewTicker(s.o.Poll)
	defer tick.Stop()
	lastWrite := time.Now()
	for {
		wake := s.o.Live.changed()
		n, err := l.Len()
		if err != nil {
			return
		}
		for after < n {
			raws, err := l.Get(after+1, min(n+1, after+1+MaxPage))
			if err != nil || len(raws) == 0 {
				return
			}
			rc.SetWriteDeadline(time.Now().Add(streamWrite))
			for _, raw := range raws {
				after++
				data, _ := json.Marshal(show(after, raw, MaxString))
				if _, err := fmt.Fprintf(w, "id: %d\ndata: %s\n\n", after, data); err != nil {
					return
				}
			}
			if rc.Flush() != nil {
				return
			}
			lastWrite = time.Now()
		}
		if run, err := loadRun(s.o.RunsDir, id); err != nil || run.Status != event.RunRunning {
			// Lines written between the Len above and the status read
			// are sent first; past the end there is nothing more to wait for.
			if m, _ := l.Len(); m <= after {
				rc.SetWriteDeadline(time.Now().Add(streamWrite))
				fmt.Fprintf(w, "event: end\ndata: %q\n\n", strings.TrimSpace(string(statusOf(run))))
				rc.Flush()
				return
			}
			continue
		}
		if time.Since(lastWrite) >= keepAlive {
			rc.SetWriteDeadline(time.Now().Add(streamWrite))
			if _, err := fmt.Fprint(w, ": alive\n\n"); err != nil || rc.Flush() != nil {
				return
			}
			lastWrite = time.Now()
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-wake:
		case <-tick.C:
		}
	}
}

func statusOf(r *record.Run) event.RunStatus {
	if r == nil {
		return "unknown"
	}
	return r.Status
}
