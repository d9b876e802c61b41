package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"github.com/forkbomb/forkbomb/internal/event"
)

// TestEventsV1 holds the typed payloads to the schema events.jsonl had
// when its data were maps: every line of testdata/events-v1.jsonl was
// written by forkbomb before the payloads were typed (one line per source
// of each kind, zero values included, with each key a source always
// wrote), and each, decoded into its payload and recorded again, comes
// out byte for byte. A payload of internal/event without a line here
// fails the test.
func TestEventsV1(t *testing.T) {
	t.Parallel()
	payloads := []event.Payload{
		&event.RunStartData{},
		&event.RunStartData{},
		&event.ForkStartData{},
		&event.ModelRequestData{},
		&event.ModelResponseData{},
		&event.ModelResponseData{},
		&event.ToolCallData{},
		&event.ToolCallData{},
		&event.ToolCallData{},
		&event.ToolResultData{},
		&event.LimitData{},
		&event.GatewayUsageData{},
		&event.ProxyRequestData{},
		&event.ProxyResponseData{},
		&event.ProxyRefusalData{},
		&event.ProxyRefusalData{},
		&event.NetConnectData{},
		&event.NetConnectData{},
		&event.NetConnectData{},
		&event.ClaudeInitData{},
		&event.ClaudeTextData{},
		&event.ClaudeResultData{},
		&event.ClaudeDroppedData{},
		&event.AgentToolCallData{},
		&event.AgentToolCallData{},
		&event.ClaudeToolResultData{},
		&event.CodexErrorData{},
		&event.CodexItemErrorData{},
		&event.CodexMessageData{},
		&event.AgentToolCallData{},
		&event.CodexCommandResultData{},
		&event.CodexCommandResultData{},
		&event.AgentToolCallData{},
		&event.CodexPatchResultData{},
		&event.CodexToolCallData{},
		&event.CodexToolResultData{},
		&event.ErrorData{},
		&event.ForkExitData{},
		&event.ForkExitData{},
		&event.JudgeStartData{},
		&event.VerdictData{},
		&event.VerdictData{},
		&event.VerdictData{},
		&event.WinnerData{},
		&event.KillData{},
		&event.RunEndData{},
		&event.RunEndData{},
		&event.VerifiedData{},
		&event.ComparedData{},
	}
	old, err := os.ReadFile(filepath.Join("testdata", "events-v1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(old, []byte("\n")), []byte("\n"))
	if len(lines) != len(payloads) {
		t.Fatalf("%d lines for %d payloads", len(lines), len(payloads))
	}
	rec := newTestRecorder(t, nil, nil)
	for i, line := range lines {
		var ev Event
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		p := payloads[i]
		if err := ev.Decode(p); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		fork := event.RunLevel
		if ev.Fork != nil {
			fork = *ev.Fork
		}
		// The race hands the sink values, not pointers.
		if err := rec.Handle(event.Event{Fork: fork, Time: ev.Time, Data: reflect.ValueOf(p).Elem().Interface().(event.Payload)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(filepath.Join(rec.Dir, "events.jsonl"))
	for i, line := range bytes.Split(bytes.TrimSuffix(again, []byte("\n")), []byte("\n")) {
		if i < len(lines) && !bytes.Equal(line, lines[i]) {
			t.Errorf("line %d (%T) written as\n%s\nwas\n%s", i+1, payloads[i], line, lines[i])
		}
	}
	if !bytes.Equal(again, old) {
		t.Errorf("the record differs from the old one:\n%s", again)
	}

	var covered []string
	for _, p := range payloads {
		covered = append(covered, reflect.TypeOf(p).Elem().Name())
	}
	for _, name := range payloadTypes(t) {
		if !slices.Contains(covered, name) {
			t.Errorf("event.%s has no line in testdata/events-v1.jsonl", name)
		}
	}
}

// payloadTypes are the types of internal/event with a Kind method but
// Event itself: its payloads.
func payloadTypes(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	var out []string
	// Through the compiled-in source path: the unprivileged CI run starts
	// this binary from a folder of its own.
	_, self, _, _ := runtime.Caller(0)
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(self), "..", "event", "*.go"))
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "Kind" {
				continue
			}
			if id, ok := fn.Recv.List[0].Type.(*ast.Ident); ok && id.Name != "Event" {
				out = append(out, id.Name)
			}
		}
	}
	if len(out) < 30 {
		t.Fatalf("found %d payload types in internal/event: the parse went wrong", len(out))
	}
	return out
}

// TestDecodeKind: an event decodes only into a payload of its own kind.
func TestDecodeKind(t *testing.T) {
	t.Parallel()
	ev := Event{Type: event.RunStart, Data: json.RawMessage(`{"id":"x"}`)}
	if err := ev.Decode(&event.WinnerData{}); !errors.Is(err, ErrKind) {
		t.Errorf("a run_start decoded as a winner: %v", err)
	}
	var r event.RunStartData
	if err := ev.Decode(&r); err != nil || r.ID != "x" {
		t.Errorf("decoded %+v, %v", r, err)
	}
}
