package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
)

// TestLayout writes a whole small run and checks the folder: the files and
// their modes, the schema version of run.json and of every event, and
// that no temporary file is left.
func TestLayout(t *testing.T) {
	t.Parallel()
	runs := t.TempDir()
	rec, err := create(runs, Run{ID: "20260101-000000-abcdef", Task: "fix it", Engine: "command", Forks: 2, Started: time.Now().UTC()}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		rec.Event(-1, event.RunStartData{Forks: 2}),
		rec.Event(0, event.ForkStartData{Workspace: "w"}),
		rec.Event(1, event.KillData{}),
		rec.ForkFile(0, "patch", []byte("diff\n")),
		rec.ForkFile(0, "verdict.json", []byte("{}\n")),
		rec.ForkFile(1, "agent.log", []byte("log\n")),
		rec.File("winner.patch", []byte("diff\n")),
		rec.Update(func(r *Run) { r.Status = event.RunWon; w := 0; r.Winner = &w }),
		rec.Close(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"events.jsonl", "forks/0/patch", "forks/0/verdict.json", "forks/1/agent.log", "run.json", "run.lock", "winner.patch"}
	var got []string
	filepath.WalkDir(rec.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		info, _ := d.Info()
		rel, _ := filepath.Rel(rec.Dir, p)
		if d.IsDir() {
			if info.Mode().Perm() != 0o700 {
				t.Errorf("%s: mode %v, want 0700", rel, info.Mode().Perm())
			}
			return nil
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", rel, info.Mode().Perm())
		}
		got = append(got, rel)
		return nil
	})
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("files %v, want %v", got, want)
	}

	r, err := Load(runs, "20260101-000000-abcdef")
	if err != nil {
		t.Fatal(err)
	}
	if r.V != SchemaVersion || r.Status != event.RunWon || r.Winner == nil || *r.Winner != 0 || r.PID != os.Getpid() || r.Task != "fix it" {
		t.Errorf("run.json reads back as %+v", r)
	}
	events, _ := os.ReadFile(filepath.Join(rec.Dir, "events.jsonl"))
	lines := bytes.Split(bytes.TrimSuffix(events, []byte("\n")), []byte("\n"))
	if len(lines) != 3 {
		t.Fatalf("%d events, want 3:\n%s", len(lines), events)
	}
	for i, line := range lines {
		var ev Event
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.V != SchemaVersion || ev.Time.IsZero() {
			t.Errorf("event %d: %s", i, line)
		}
		if (ev.Fork == nil) != (i == 0) {
			t.Errorf("event %d: fork %v", i, ev.Fork)
		}
		if (ev.Data == nil) != (ev.Type == event.Kill) {
			t.Errorf("event %d: data %s (a kill has none, the others some)", i, ev.Data)
		}
	}
}

// TestFileNames checks that the record writes only its own plain file
// names: no path out of the folder, nothing over run.json or events.jsonl.
func TestFileNames(t *testing.T) {
	t.Parallel()
	rec := newTestRecorder(t, nil, nil)
	defer rec.Close()
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"fork -1", rec.ForkFile(-1, "patch", nil)},
		{"fork ../x", rec.ForkFile(0, "../x", nil)},
		{"fork a/b", rec.ForkFile(0, "a/b", nil)},
		{"fork ..", rec.ForkFile(0, "..", nil)},
		{"fork empty", rec.ForkFile(0, "", nil)},
		{"run.json", rec.File("run.json", nil)},
		{"events.jsonl", rec.File("events.jsonl", nil)},
		{"hidden", rec.File(".x", nil)},
		{"up", rec.File("../escape", nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, ErrFileName) {
				t.Errorf("err = %v, want ErrFileName", tc.err)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(rec.Dir), "escape")); err == nil {
		t.Error("a file was written outside the run folder")
	}
	if _, err := create(t.TempDir(), Run{ID: "../x"}, nil, nil); err == nil {
		t.Error("an id that is a path was accepted")
	}
}

// TestAtomicWrites attacks the write path from the run folder's side: a
// link planted at the temporary name a write used to take is not followed,
// and concurrent writers of one file never leave it torn. The positive
// control is that the planted link works when followed.
func TestAtomicWrites(t *testing.T) {
	t.Parallel()
	t.Run("planted link at the temporary name", func(t *testing.T) {
		t.Parallel()
		rec := newTestRecorder(t, nil, nil)
		defer rec.Close()
		outside := filepath.Join(t.TempDir(), "outside")
		os.WriteFile(outside, []byte("untouched"), 0o600)
		dir := filepath.Join(rec.Dir, "forks", "0")
		os.MkdirAll(dir, 0o700)
		link := filepath.Join(dir, fmt.Sprintf("patch.%d.tmp", os.Getpid()))
		if err := os.Symlink(outside, link); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(link, []byte("followed"), 0o600)
		if b, _ := os.ReadFile(outside); string(b) != "followed" {
			t.Fatal("positive control: writing through the link does not reach the outside file")
		}
		os.WriteFile(outside, []byte("untouched"), 0o600)
		if err := rec.ForkFile(0, "patch", []byte("new")); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(outside); string(b) != "untouched" {
			t.Errorf("a write followed the planted link: %q", b)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "patch")); string(b) != "new" {
			t.Errorf("patch = %q", b)
		}
	})
	t.Run("concurrent writers", func(t *testing.T) {
		t.Parallel()
		rec := newTestRecorder(t, nil, nil)
		defer rec.Close()
		path := filepath.Join(rec.Dir, "forks", "0", "patch")
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := bytes.Repeat([]byte{byte('a' + w)}, 256<<10)
				for i := 0; i < 5; i++ {
					if err := rec.ForkFile(0, "patch", body); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		for reading := true; reading; {
			select {
			case <-done:
				reading = false
			default:
			}
			b, err := os.ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(b) != 256<<10 || len(bytes.Trim(b, string(b[:1]))) != 0 {
				t.Fatalf("a reader saw a torn file (%d bytes)", len(b))
			}
		}
		entries, _ := os.ReadDir(filepath.Dir(path))
		if len(entries) != 1 {
			t.Errorf("temporary files left: %v", entries)
		}
	})
	t.Run("failed write leaves no temporary", func(t *testing.T) {
		t.Parallel()
		rec := newTestRecorder(t, nil, nil)
		defer rec.Close()
		dir := filepath.Join(rec.Dir, "forks", "0")
		os.MkdirAll(filepath.Join(dir, "patch", "x"), 0o700) // a folder where the file goes
		if err := rec.ForkFile(0, "patch", []byte("p")); err == nil {
			t.Fatal("writing over a folder succeeded")
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("left behind: %v", entries)
		}
	})
}

// TestWriteErrors checks that the record reports what it could not write:
// an event on a closed record fails, and Close says so again. Raw
// arguments that are not JSON are recorded as text; a payload JSON cannot
// encode is recorded with its data withheld, not dropped.
func TestWriteErrors(t *testing.T) {
	t.Parallel()
	rec := newTestRecorder(t, nil, nil)
	if err := rec.Event(0, event.ToolCallData{Tool: "shell", Input: event.JSON(`{"not json`)}); err != nil {
		t.Errorf("an event with raw text that is not JSON was not recorded: %v", err)
	}
	if err := rec.Event(0, event.AgentToolCallData{Tool: "f", Input: func() {}}); err != nil {
		t.Errorf("an event whose data cannot be encoded was not recorded: %v", err)
	}
	rec.events.Close() // the disk goes away under the record
	if err := rec.Event(0, event.KillData{}); err == nil {
		t.Error("an event that could not be written reported no error")
	}
	if err := rec.Close(); err == nil || !strings.Contains(err.Error(), "kill") {
		t.Errorf("Close = %v, want the lost event's error", err)
	}
	b, _ := os.ReadFile(filepath.Join(rec.Dir, "events.jsonl"))
	if !bytes.Contains(b, []byte(`"input":"{\"not json"`)) || !bytes.Contains(b, []byte(`"type":"tool_call","fork":0,"data":{"withheld":"its data could not be encoded"}`)) {
		t.Errorf("events.jsonl = %s", b)
	}
	if _, err := create(filepath.Dir(rec.Dir), Run{ID: "r1"}, nil, nil); err == nil {
		t.Error("a run id was reused over an existing record")
	}
}

// TestLoadList checks reading runs back: a run whose recorder is open
// reads as running, one still "running" whose recorder is gone reads as
// interrupted (whatever its pid says), a corrupt one is an error, List is
// newest first and skips what is not a run.
func TestLoadList(t *testing.T) {
	t.Parallel()
	runs := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for _, r := range []Run{{ID: "20260101-000000-aaaaaa"}, {ID: "20260102-000000-bbbbbb"}} {
		rec, err := create(runs, r, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer rec.Close() // still recording while the test reads
	}
	rec, _ := create(runs, Run{ID: "20260103-000000-cccccc"}, nil, nil)
	rec.Update(func(r *Run) { r.PID = dead.Process.Pid })
	rec.Close()
	os.MkdirAll(filepath.Join(runs, ".hidden"), 0o700)
	os.MkdirAll(filepath.Join(runs, "20260104-000000-corrup"), 0o700)
	os.WriteFile(filepath.Join(runs, "20260104-000000-corrup", "run.json"), []byte("{"), 0o600)

	if r, err := Load(runs, "20260101-000000-aaaaaa"); err != nil || r.Status != event.RunRunning {
		t.Errorf("a live run: %+v, %v", r, err)
	}
	// The lock was this process's: a child another test forks at that moment holds a copy of
	// its descriptor until the child's exec closes it (close-on-exec), so the lock may outlive
	// Close by that long on a loaded machine (a CI run read the run as running once). It must
	// be free soon after; a lock kept for good fails here.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := Load(runs, "20260103-000000-cccccc")
		if err == nil && r.Status == event.RunInterrupted {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("a run whose process is gone: %+v, %v", r, err)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := Load(runs, "20260104-000000-corrup"); err == nil {
		t.Error("a corrupt run.json loaded")
	}
	if _, err := Load(runs, "../x"); err == nil {
		t.Error("an id that is a path loaded")
	}
	all, err := List(runs)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range all {
		ids = append(ids, r.ID)
	}
	if strings.Join(ids, " ") != "20260103-000000-cccccc 20260102-000000-bbbbbb 20260101-000000-aaaaaa" {
		t.Errorf("List = %v", ids)
	}
}
