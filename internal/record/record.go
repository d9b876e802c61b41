// Package record is a run's folder: run.json (what the run is and how it
// ended), events.jsonl (everything that happened, one JSON object a line),
// and each fork's patch and verdict. The record is enough to replay a run
// without running anything again, and holds no secret: every string
// written passes the redactor.
//
// Layout, under the runs directory:
//
//	<id>/run.json
//	<id>/events.jsonl
//	<id>/winner.patch
//	<id>/forks/<n>/patch
//	<id>/forks/<n>/verdict.json
//	<id>/forks/<n>/agent.log
package record

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/forkbomb/forkbomb/internal/workspace"
)

// SchemaVersion is the version of events.jsonl and run.json.
const SchemaVersion = 1

// Run is run.json.
type Run struct {
	V            int       `json:"v"`
	ID           string    `json:"id"`
	Task         string    `json:"task"`
	Engine       string    `json:"engine"`
	Agent        []string  `json:"agent,omitempty"`
	Model        string    `json:"model,omitempty"`
	Forks        int       `json:"forks"`
	Test         string    `json:"test"`
	Repo         string    `json:"repo"`
	Base         string    `json:"base"`
	Status       string    `json:"status"` // running, won, no-winner, interrupted
	Winner       *int      `json:"winner,omitempty"`
	PID          int       `json:"pid"`
	Started      time.Time `json:"started"`
	Ended        time.Time `json:"ended,omitzero"`
	Seconds      float64   `json:"seconds,omitempty"`
	Fork         []Fork    `json:"fork_results,omitempty"`
	TokensIn     int64     `json:"tokens_in,omitempty"`
	TokensOut    int64     `json:"tokens_out,omitempty"`
	CostMicroUSD int64     `json:"cost_micro_usd,omitempty"` // model cost in millionths of a dollar, at --price-in/--price-out
}

// Fork is one fork's outcome in run.json.
type Fork struct {
	N            int     `json:"n"`
	State        string  `json:"state"` // running, exited, crashed, timed-out, killed
	Exit         int     `json:"exit"`
	Verdict      string  `json:"verdict,omitempty"`
	Reason       string  `json:"reason,omitempty"`
	Score        float64 `json:"score"`
	TokensIn     int64   `json:"tokens_in,omitempty"`
	TokensOut    int64   `json:"tokens_out,omitempty"`
	CostMicroUSD int64   `json:"cost_micro_usd,omitempty"` // model cost in millionths of a dollar, at --price-in/--price-out
}

// Event is one line of events.jsonl.
type Event struct {
	V    int            `json:"v"`
	Time time.Time      `json:"time"`
	Type string         `json:"type"`
	Fork *int           `json:"fork,omitempty"`
	Data map[string]any `json:"data,omitempty"`
}

// Recorder writes one run's folder.
type Recorder struct {
	Dir    string
	secret []string
	mu     sync.Mutex
	events *os.File
	run    Run
}

// NewID returns a run id: sortable by time, unique by its random tail.
func NewID() string {
	var b [3]byte
	rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// Create makes the run's folder under runsDir. secrets are values (API
// keys) that must never appear in the record.
func Create(runsDir string, r Run, secrets []string) (*Recorder, error) {
	if err := workspace.ValidateName(r.ID); err != nil {
		return nil, err
	}
	dir := filepath.Join(runsDir, r.ID)
	if err := os.MkdirAll(filepath.Join(dir, "forks"), 0o700); err != nil {
		return nil, fmt.Errorf("run folder: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "events.jsonl"), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("run folder: %w", err)
	}
	rec := &Recorder{Dir: dir, events: f, run: r}
	for _, s := range secrets {
		if len(s) >= 8 {
			rec.secret = append(rec.secret, s)
		}
	}
	rec.run.V, rec.run.PID, rec.run.Status = SchemaVersion, os.Getpid(), "running"
	return rec, rec.saveRun()
}

// redact replaces every secret value in b.
func (r *Recorder) redact(b []byte) []byte {
	for _, s := range r.secret {
		b = bytes.ReplaceAll(b, []byte(s), []byte("[redacted]"))
	}
	return b
}

// Event appends one event; fork < 0 for a run-level event.
func (r *Recorder) Event(typ string, fork int, data map[string]any) {
	ev := Event{V: SchemaVersion, Time: time.Now().UTC(), Type: typ, Data: data}
	if fork >= 0 {
		ev.Fork = &fork
	}
	line, err := json.Marshal(ev)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events.Write(append(r.redact(line), '\n'))
}

// ForkFile writes a file of fork n's folder (patch, verdict.json, agent.log).
func (r *Recorder) ForkFile(n int, name string, data []byte) error {
	dir := filepath.Join(r.Dir, "forks", strconv.Itoa(n))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, name), r.redact(data))
}

// File writes a file of the run's folder (winner.patch).
func (r *Recorder) File(name string, data []byte) error {
	return writeAtomic(filepath.Join(r.Dir, name), r.redact(data))
}

// Update changes run.json under the recorder's lock.
func (r *Recorder) Update(f func(*Run)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.run)
	return r.saveRunLocked()
}

func (r *Recorder) saveRun() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.saveRunLocked()
}

func (r *Recorder) saveRunLocked() error {
	data, err := json.MarshalIndent(r.run, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(r.Dir, "run.json"), r.redact(append(data, '\n')))
}

// Close finishes the record.
func (r *Recorder) Close() error { return r.events.Close() }

func writeAtomic(path string, data []byte) error {
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Load reads a run; a run still "running" whose process is gone (killed)
// reads as "interrupted".
func Load(runsDir, id string) (*Run, error) {
	if err := workspace.ValidateName(id); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(runsDir, id, "run.json"))
	if err != nil {
		return nil, fmt.Errorf("no run %s in %s", id, runsDir)
	}
	var r Run
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("run %s: corrupt run.json: %w", id, err)
	}
	if r.Status == "running" && syscall.Kill(r.PID, 0) == syscall.ESRCH {
		r.Status = "interrupted"
	}
	return &r, nil
}

// List reads every run, newest first.
func List(runsDir string) ([]*Run, error) {
	entries, err := os.ReadDir(runsDir)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	var out []*Run
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if r, err := Load(runsDir, e.Name()); err == nil {
			out = append(out, r)
		}
	}
	return out, nil
}
