package engine

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// fakeFork is a Workspace that records how each command reached it.
type fakeFork struct {
	files    workspace.Files
	startErr error // what Session returns
	log      []string
	open     int
}

func (f *fakeFork) Exec(ctx context.Context, p sandbox.Policy, stdio sandbox.Stdio) (*sandbox.Result, error) {
	f.log = append(f.log, "exec "+p.Command[2])
	return &sandbox.Result{}, nil
}

func (f *fakeFork) Files(context.Context) (string, workspace.Files, error) {
	return "/ws", f.files, nil
}

type fakeSession struct {
	f *fakeFork
	n int
}

func (s *fakeSession) Run(ctx context.Context, c sandbox.Cmd, stdio sandbox.Stdio) (*sandbox.Result, error) {
	if c.Timeout != shellTimeout || c.MaxOutput != shellMaxOutput {
		s.f.log = append(s.f.log, "bad limits")
	}
	s.f.log = append(s.f.log, "session"+strings.Repeat("'", s.n)+" "+c.Argv[2])
	return &sandbox.Result{}, nil
}

func (s *fakeSession) Close() error { s.f.open--; s.f.log = append(s.f.log, "close"); return nil }

// sessionFork adds Sessions to a fakeFork.
type sessionFork struct{ *fakeFork }

func (f sessionFork) Session(ctx context.Context, p sandbox.Policy) (Session, error) {
	if f.startErr != nil {
		return nil, f.startErr
	}
	f.open++
	f.log = append(f.log, "start")
	return &fakeSession{f: f.fakeFork, n: strings.Count(strings.Join(f.log, ","), "start") - 1}, nil
}

// TestAPIShellSession: the api engine keeps one session for the shell
// commands of a fork, starts a new one after an editor write (the old
// overlay would not show it), closes it when the agent ends, and falls
// back to Exec where the workspace has no sessions.
func TestAPIShellSession(t *testing.T) {
	script := map[string][]Step{"sh": {
		{Tools: []ToolCall{
			{Name: "shell", Input: map[string]any{"command": "a"}},
			{Name: "shell", Input: map[string]any{"command": "b"}},
		}},
		{Tools: []ToolCall{
			{Name: "editor", Input: map[string]any{"command": "create", "path": "new.txt", "file_text": "x"}},
			{Name: "shell", Input: map[string]any{"command": "c"}},
		}},
		{Text: "Done."},
	}}
	for _, c := range []struct {
		name     string
		sessions bool
		startErr error
		want     []string
	}{
		{"session", true, nil, []string{"start", "session a", "session b", "close", "start", "session' c", "close"}},
		{"no sessions", false, nil, []string{"exec a", "exec b", "exec c"}},
		{"unsupported", true, sandbox.ErrSessionUnsupported, []string{"exec a", "exec b", "exec c"}},
		{"start fails", true, errors.New("boom"), []string{"exec a", "exec b", "exec c"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, err := StartScripted("k", script)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			dir := t.TempDir()
			f := &fakeFork{files: workspace.LayerFiles{Layers: []string{filepath.Join(dir)}}, startErr: c.startErr}
			var w Workspace = f
			if c.sessions {
				w = sessionFork{f}
			}
			a := &API{Provider: "anthropic", Model: "scripted", BaseURL: srv.URL, APIKey: "k"}
			out := a.Run(context.Background(), w, Task{Prompt: "[persona: sh] go"})
			if out.State != event.ForkExited {
				t.Fatalf("outcome %+v", out)
			}
			if !reflect.DeepEqual(f.log, c.want) {
				t.Errorf("commands went\n  %q\nwant\n  %q", f.log, c.want)
			}
			if f.open != 0 {
				t.Errorf("%d sessions left open", f.open)
			}
		})
	}
}
