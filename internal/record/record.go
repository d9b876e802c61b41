// Package record is a run's folder: run.json (what the run is and how it
// ended), events.jsonl (everything that happened, one JSON object a line),
// and each fork's patch and verdict. The record is enough to replay a run
// without running anything again, and holds no secret: every value is
// redacted before it is encoded and every file's bytes again before they
// are written (redact.go says which forms of a secret are found).
//
// Layout, under the runs directory:
//
//	<id>/run.json
//	<id>/run.lock      held by the recording forkbomb while it runs (live.go)
//	<id>/events.jsonl
//	<id>/winner.patch
//	<id>/forks/<n>/patch
//	<id>/forks/<n>/verdict.json
//	<id>/forks/<n>/agent.log
package record

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/forkbomb/forkbomb/internal/atomicfile"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/home"
	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// SchemaVersion is the version of events.jsonl and run.json.
const SchemaVersion = 1

// Run is run.json.
type Run struct {
	V       int             `json:"v"`
	ID      string          `json:"id"`
	Task    string          `json:"task"`
	Engine  string          `json:"engine"`
	Agent   []string        `json:"agent,omitempty"`
	Model   string          `json:"model,omitempty"`
	Forks   int             `json:"forks"`
	Test    string          `json:"test"`
	Repo    string          `json:"repo"`
	Base    string          `json:"base"`
	Status  event.RunStatus `json:"status"`
	Winner  *int            `json:"winner,omitempty"`
	PID     int             `json:"pid"`
	Started time.Time       `json:"started"`
	Ended   time.Time       `json:"ended,omitzero"`
	Seconds float64         `json:"seconds,omitempty"`
	Fork    []Fork          `json:"fork_results,omitempty"`
	// Compared: passing forks whose patches differ, judged against each
	// other's tests (the compared events' data, one per pair).
	Compared     []event.ComparedData `json:"compared,omitempty"`
	TokensIn     int64                `json:"tokens_in,omitempty"`
	TokensOut    int64                `json:"tokens_out,omitempty"`
	CostMicroUSD int64                `json:"cost_micro_usd,omitempty"` // model cost in millionths of a dollar, at --price-in/--price-out
}

// Fork is one fork's outcome in run.json.
type Fork struct {
	N       int             `json:"n"`
	State   event.ForkState `json:"state"`
	Exit    int             `json:"exit"`
	Verdict event.Verdict   `json:"verdict,omitempty"`
	Reason  string          `json:"reason,omitempty"`
	Score   float64         `json:"score"`
	// Findings: code in the fork's patch that detects or inspects a test
	// run ("FILE:LINE: CONSTRUCT (RULE)"); a passing patch with findings
	// has the verdict "review".
	Findings []string `json:"findings,omitempty"`
	// Warnings: the judge's, about the judgement rather than the patch
	// (event.VerdictData.Warnings), when it gave any.
	Warnings []string `json:"warnings,omitempty"`
	// Strength: the verifier's word on a passing fork's tests (--verify),
	// when it gave one.
	Strength     *event.VerifiedData `json:"strength,omitempty"`
	TokensIn     int64               `json:"tokens_in,omitempty"`
	TokensOut    int64               `json:"tokens_out,omitempty"`
	CostMicroUSD int64               `json:"cost_micro_usd,omitempty"` // model cost in millionths of a dollar, at --price-in/--price-out
}

// Event is one line of events.jsonl.
type Event struct {
	V    int        `json:"v"`
	Time time.Time  `json:"time"`
	Type event.Kind `json:"type"`
	Fork *int       `json:"fork,omitempty"`
	// Data is the event's payload as written: its keys sorted, every
	// value redacted; absent when the payload has nothing to say.
	Data json.RawMessage `json:"data,omitempty"`
}

// Decode reads the event's data into p, a payload of the event's kind. A
// kind written by several sources decodes into any of their payloads:
// the reader picks the one holding the fields it wants, and keys of
// another source's are ignored.
func (e *Event) Decode(p event.Payload) error {
	if p.Kind() != e.Type {
		return fmt.Errorf("decode a %s event as %s: %w", e.Type, p.Kind(), ErrKind)
	}
	if len(e.Data) == 0 {
		return nil
	}
	if err := json.Unmarshal(e.Data, p); err != nil {
		return fmt.Errorf("decode a %s event: %w", e.Type, err)
	}
	return nil
}

// Recorder writes one run's folder.
type Recorder struct {
	Dir    string
	redact *redactor
	mu     sync.Mutex
	events *os.File
	lock   *os.File // holds LockFile for the record's whole life; nil where flock is unsupported
	err    error    // the first failed event write, returned by Close
	run    Run
}

// NewID returns a run id: sortable by time, unique by its random tail.
func NewID() string {
	var b [3]byte
	rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// Create makes the run's folder under runsDir. secrets are values (API
// keys) that must never appear in the record; the values of forkbomb's own
// environment variables whose names look like credentials
// (sandbox.CredentialEnv) are added to them here, so that no caller can
// forget them. A credential shorter than MinSecretLen cannot be redacted
// and is refused (ErrShortSecret).
func Create(runsDir string, r Run, secrets []string) (*Recorder, error) {
	return create(runsDir, r, secrets, os.Environ())
}

func create(runsDir string, r Run, secrets, environ []string) (*Recorder, error) {
	if err := home.ValidateID("run", r.ID); err != nil {
		return nil, err
	}
	var all []string
	for _, c := range sandbox.CredentialEnv(environ) {
		if len(c.Value) < MinSecretLen {
			return nil, fmt.Errorf("%w: $%s looks like a credential and is %d bytes; unset it or lengthen it", ErrShortSecret, c.Name, len(c.Value))
		}
		all = append(all, c.Value)
	}
	for _, s := range secrets {
		if s != "" && len(s) < MinSecretLen {
			return nil, fmt.Errorf("%w: a key of %d bytes", ErrShortSecret, len(s))
		}
		all = append(all, s)
	}
	dir := filepath.Join(runsDir, r.ID)
	if err := os.MkdirAll(filepath.Join(dir, "forks"), 0o700); err != nil {
		return nil, fmt.Errorf("run folder: %w", err)
	}
	// The lock is held before run.json first says "running", so no
	// reader ever sees a running run without its lock held.
	lock, err := holdLock(dir)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "events.jsonl"), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		closeLock(lock)
		return nil, fmt.Errorf("run folder: %w", err)
	}
	rec := &Recorder{Dir: dir, events: f, lock: lock, run: r, redact: newRedactor(all)}
	rec.run.V, rec.run.PID, rec.run.Status = SchemaVersion, os.Getpid(), event.RunRunning
	if err := rec.saveRun(); err != nil {
		rec.Close()
		return nil, err
	}
	return rec, nil
}

func closeLock(f *os.File) error {
	if f == nil {
		return nil
	}
	return f.Close()
}

// Event appends one event, now; fork < 0 for a run-level event. Its data
// is redacted value by value before it is encoded, and the encoded line
// again. A failed write is returned, and the first one again by Close.
func (r *Recorder) Event(fork int, data event.Payload) error {
	return r.write(time.Now().UTC(), fork, data)
}

func (r *Recorder) write(at time.Time, fork int, data event.Payload) error {
	if at.IsZero() {
		at = time.Now().UTC()
	}
	kind := data.Kind()
	ev := Event{V: SchemaVersion, Time: at.UTC(), Type: event.Kind(r.redact.str(string(kind)))}
	if fork >= 0 {
		ev.Fork = &fork
	}
	line, err := r.encodeEvent(ev, data)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		_, err = r.events.Write(append(line, '\n'))
	}
	if err != nil {
		err = fmt.Errorf("record event %s: %w", kind, err)
		if r.err == nil {
			r.err = err
		}
	}
	return err
}

// Handle writes one event of the race's sink (event.Fanout): the record is
// its primary subscriber, so a failed write reaches the race.
func (r *Recorder) Handle(ev event.Event) error {
	return r.write(ev.Time, ev.Fork, ev.Data)
}

// encodeEvent encodes ev with data and redacts the line. The data is
// cleaned value by value first (redactor.value, which writes its keys
// sorted); a payload JSON cannot encode (a value of an untyped field that
// is not data) is recorded with its data withheld, never dropped. A
// secret that spans two strings of the line is found only in the encoded
// bytes, and redacting it there can break the line's JSON: the event's
// data is then withheld too.
func (r *Recorder) encodeEvent(ev Event, data event.Payload) ([]byte, error) {
	clean, ok := r.redact.value(data).(map[string]any)
	switch {
	case !ok:
		ev.Data = withheld("its data could not be encoded")
	case len(clean) > 0:
		b, err := json.Marshal(clean)
		if err != nil {
			return nil, fmt.Errorf("encode: %w", err)
		}
		ev.Data = b
	}
	line, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	if red, ok := r.redact.text(line); ok {
		if json.Valid(red) {
			return red, nil
		}
		ev.Data = withheld("a secret spanned this event's strings")
		if line, err = json.Marshal(ev); err != nil {
			return nil, fmt.Errorf("encode: %w", err)
		}
		if _, ok := r.redact.text(line); ok {
			return nil, ErrRedaction
		}
	}
	return line, nil
}

// withheld is the data of an event whose own could not be written.
func withheld(why string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"withheld": why})
	return b
}

// ForkFile writes a file of fork n's folder (patch, verdict.json, agent.log).
func (r *Recorder) ForkFile(n int, name string, data []byte) error {
	if n < 0 || !plainName(name) {
		return fmt.Errorf("record fork %d file %q: %w", n, name, ErrFileName)
	}
	dir := filepath.Join(r.Dir, "forks", strconv.Itoa(n))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("record fork %d: %w", n, err)
	}
	red, _ := r.redact.text(data)
	return atomicfile.Write(filepath.Join(dir, name), red)
}

// File writes a file of the run's folder (winner.patch).
func (r *Recorder) File(name string, data []byte) error {
	if !plainName(name) || name == "run.json" || name == "events.jsonl" {
		return fmt.Errorf("record file %q: %w", name, ErrFileName)
	}
	red, _ := r.redact.text(data)
	return atomicfile.Write(filepath.Join(r.Dir, name), red)
}

// plainName is a file name of one path element that is not hidden (the
// temporary files of writeAtomic start with a dot).
func plainName(name string) bool {
	return name != "" && !strings.HasPrefix(name, ".") && !strings.ContainsAny(name, "/\\\x00")
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
	data, err := json.MarshalIndent(r.redact.run(r.run), "", "  ")
	if err != nil {
		return fmt.Errorf("record run.json: %w", err)
	}
	data, _ = r.redact.text(append(data, '\n'))
	if !json.Valid(data) {
		return fmt.Errorf("record run.json: %w", ErrRedaction)
	}
	return atomicfile.Write(filepath.Join(r.Dir, "run.json"), data)
}

// Close finishes the record and releases its lock: from then on the run
// reads as ended, or as "interrupted" if run.json still says "running". It
// returns the first event that could not be written, if any, so that a
// record with a hole in it does not look whole.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := errors.Join(r.err, r.events.Close())
	closeLock(r.lock)
	r.lock = nil
	return err
}

// Load reads a run; a run still "running" whose forkbomb is gone (killed,
// or its host down) reads as "interrupted". Whether it is gone is read from
// the run's lock (live.go), wherever the reader runs; a record without one
// falls back to its pid, on this host.
func Load(runsDir, id string) (*Run, error) {
	dir, err := home.Join(runsDir, "run", id)
	if err != nil {
		return nil, err
	}
	r, err := readRun(dir, id, runsDir)
	if err != nil || r.Status != event.RunRunning || running(dir, r.PID) {
		return r, err
	}
	// The lock is free: the run ended, either just now (its final
	// run.json written before the lock was dropped) or by being killed.
	if r, err = readRun(dir, id, runsDir); err == nil && r.Status == event.RunRunning {
		r.Status = event.RunInterrupted
	}
	return r, err
}

func readRun(dir, id, runsDir string) (*Run, error) {
	data, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		return nil, fmt.Errorf("no run %s in %s: %w", id, runsDir, ErrNoRun)
	}
	var r Run
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("run %s: corrupt run.json: %w", id, err)
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
