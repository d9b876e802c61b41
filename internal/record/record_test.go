package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
)

// recordFiles reads every file of a run folder.
func recordFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// testData is a payload of any shape, for what the record does with data
// whatever its kind.
type testData map[string]any

func (testData) Kind() event.Kind { return "x" }

func newTestRecorder(t *testing.T, secrets, environ []string) *Recorder {
	t.Helper()
	rec, err := create(t.TempDir(), Run{ID: "r1", Task: "t", Engine: "api", Forks: 2, Test: "go test", Started: time.Now().UTC()}, secrets, environ)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestRecordRedaction writes a secret into every file of a record, each
// through the way forkbomb's race writes that file, and reads the files
// back from the outside. The positive control is the same writes with a
// recorder that holds no secret: the check must find the secret there.
func TestRecordRedaction(t *testing.T) {
	t.Parallel()
	writes := []struct {
		name  string
		write func(rec *Recorder, s string) error
	}{
		{"event string", func(rec *Recorder, s string) error {
			return rec.Event(0, event.ToolResultData{Tool: "shell", Output: "token: " + s})
		}},
		{"model echoes the key \\u-escaped in raw tool-call JSON", func(rec *Recorder, s string) error {
			u := uEscape(s, func(i int) bool { return i%2 == 1 })
			return rec.Event(1, event.ToolCallData{Tool: "shell", Input: event.JSON(`{"command":"echo '` + u + `'"}`)})
		}},
		{"raw tool-call arguments that are not JSON", func(rec *Recorder, s string) error {
			return rec.Event(1, event.ToolCallData{Tool: "shell", Input: event.JSON(`{"command":"` + s)})
		}},
		{"error event", func(rec *Recorder, s string) error {
			return rec.Event(-1, event.ErrorData{Error: fmt.Errorf("401 for key %s", s).Error()})
		}},
		{"event data key (an agent's tool input)", func(rec *Recorder, s string) error {
			return rec.Event(-1, event.AgentToolCallData{Source: event.SourceAgent, Tool: "Bash", Input: map[string]any{s: true}})
		}},
		{"run.json", func(rec *Recorder, s string) error {
			return rec.Update(func(r *Run) {
				r.Task = "use " + s
				r.Agent = []string{"agent", "--key=" + s}
				r.Fork = []Fork{{N: 0, Reason: "saw " + s}}
			})
		}},
		{"run.json, a fork's finding", func(rec *Recorder, s string) error {
			return rec.Update(func(r *Run) { r.Fork = []Fork{{N: 0, Findings: []string{"lib.go:3: " + s}}} })
		}},
		{"run.json, a fork's judge warning", func(rec *Recorder, s string) error {
			return rec.Update(func(r *Run) { r.Fork = []Fork{{N: 0, Warnings: []string{"the base fails " + s}}} })
		}},
		{"agent.log with the raw tool-call JSON", func(rec *Recorder, s string) error {
			raw := `{"command":"echo ` + uEscape(s, func(int) bool { return true }) + `"}`
			return rec.ForkFile(0, "agent.log", []byte("> shell "+raw+"\n"+s+"\n"))
		}},
		{"patch with the key base64'd", func(rec *Recorder, s string) error {
			return rec.ForkFile(1, "patch", []byte("+data = \""+spellings(s)["base64 std at +1"]+"\"\n+more = "+spellings(s)["base64 raw url at +2"]+"\n"))
		}},
		{"verdict.json", func(rec *Recorder, s string) error {
			v, _ := json.MarshalIndent(map[string]any{"reason": "output: " + s}, "", "  ")
			return rec.ForkFile(0, "verdict.json", v)
		}},
		{"winner.patch", func(rec *Recorder, s string) error {
			return rec.File("winner.patch", []byte("+key = \""+jsonInner(s, true)+"\"\n+url = "+spellings(s)["query escape"]+"\n"))
		}},
	}
	for sname, secret := range testSecrets {
		for _, w := range writes {
			t.Run(sname+"/"+w.name, func(t *testing.T) {
				t.Parallel()
				control := newTestRecorder(t, nil, nil)
				if err := w.write(control, secret); err != nil {
					t.Fatal(err)
				}
				control.Close()
				seen := false
				for _, b := range recordFiles(t, control.Dir) {
					seen = seen || len(leaks(b, secret)) > 0
				}
				if !seen {
					t.Fatal("positive control: the check finds the secret in no file of an unredacted record")
				}
				// The secret comes once as an explicit key, once from the
				// environment.
				for how, rec := range map[string]*Recorder{
					"key":         newTestRecorder(t, []string{secret}, nil),
					"environment": newTestRecorder(t, nil, []string{"HOME=/x", "ANTHROPIC_API_KEY=" + secret}),
				} {
					if err := w.write(rec, secret); err != nil {
						t.Fatalf("%s: %v", how, err)
					}
					if err := rec.Close(); err != nil {
						t.Fatalf("%s: %v", how, err)
					}
					for name, b := range recordFiles(t, rec.Dir) {
						if l := leaks(b, secret); len(l) > 0 {
							t.Errorf("%s: %s holds %v:\n%s", how, name, l, b)
						}
						if strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".jsonl") {
							for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
								if len(line) == 0 {
									continue
								}
								if name == "events.jsonl" && !json.Valid(line) || name != "events.jsonl" && !json.Valid(b) {
									t.Errorf("%s: %s is not valid JSON after redaction: %s", how, name, line)
								}
							}
						}
					}
				}
			})
		}
	}
}

// TestShortSecrets checks the decision for credentials too short to redact:
// the run is refused before anything is written. Empty values are no
// credential at all.
func TestShortSecrets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		secrets, environ []string
		refused          bool
	}{
		{"short key", []string{"abc"}, nil, true},
		{"seven bytes", []string{"sk-1234"}, nil, true},
		{"short credential in the environment", nil, []string{"MY_TOKEN=tok"}, true},
		{"short password variable", nil, []string{"DB_PASSWORD=hunter2"}, true},
		{"eight bytes", []string{"sk-12345"}, nil, false},
		{"empty key (command engine)", []string{""}, nil, false},
		{"empty credential variable", nil, []string{"AWS_SECRET_ACCESS_KEY="}, false},
		{"short value of an ordinary variable", nil, []string{"LANG=C", "X=1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runs := t.TempDir()
			_, err := create(runs, Run{ID: "r1"}, tc.secrets, tc.environ)
			if got := errors.Is(err, ErrShortSecret); got != tc.refused {
				t.Fatalf("refused = %v (%v), want %v", got, err, tc.refused)
			}
			if tc.refused {
				if strings.Contains(err.Error(), "tok") || strings.Contains(err.Error(), "hunter2") {
					t.Errorf("the refusal shows the value: %v", err)
				}
				if _, err := os.Stat(filepath.Join(runs, "r1")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("a refused run left its folder: %v", err)
				}
			}
		})
	}
}

// TestCreateReadsEnvironment checks that Create itself adds forkbomb's
// credential variables, whatever its caller passes.
func TestCreateReadsEnvironment(t *testing.T) {
	secret := "env-secret-" + strings.Repeat("z", 20)
	t.Setenv("FORKBOMB_TEST_API_KEY", secret)
	rec, err := Create(t.TempDir(), Run{ID: "r1", Task: secret}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec.Event(-1, testData{"s": secret})
	rec.Close()
	for name, b := range recordFiles(t, rec.Dir) {
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the environment's credential", name)
		}
	}
}

// TestSecretAcrossStrings checks the last line of defence: a secret that
// only appears once the event is encoded (it spans two of its strings) is
// found in the encoded bytes, and the line stays well-formed — redacted if
// it still parses, else with the event's data withheld. The positive
// control is the unredacted line.
func TestSecretAcrossStrings(t *testing.T) {
	t.Parallel()
	data := testData{"a": "xx-sec", "b": "ret-key-yy"}
	for _, tc := range []struct{ secret, want string }{
		{`sec","b":"ret-key`, `"xx-[redacted]-yy"`},
		{`x-sec","b`, `"withheld"`},
	} {
		t.Run(tc.secret, func(t *testing.T) {
			t.Parallel()
			control := newTestRecorder(t, nil, nil)
			control.Event(0, data)
			control.Close()
			if b, _ := os.ReadFile(filepath.Join(control.Dir, "events.jsonl")); !bytes.Contains(b, []byte(tc.secret)) {
				t.Fatalf("positive control: the encoded event does not hold the secret: %s", b)
			}
			rec := newTestRecorder(t, []string{tc.secret}, nil)
			if err := rec.Event(0, data); err != nil {
				t.Fatal(err)
			}
			rec.Close()
			b, _ := os.ReadFile(filepath.Join(rec.Dir, "events.jsonl"))
			if bytes.Contains(b, []byte(tc.secret)) || !json.Valid(bytes.TrimSpace(b)) || !bytes.Contains(b, []byte(tc.want)) {
				t.Errorf("events.jsonl = %s", b)
			}
		})
	}
}
