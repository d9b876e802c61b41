package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// loopScript is the conversation both protocol tests play.
func loopScript() map[string][]Step {
	return map[string][]Step{"tester": {
		{Text: "Looking.", Tools: []ToolCall{{Name: "editor", Input: map[string]any{"command": "view", "path": "a.txt"}}}},
		{Tools: []ToolCall{
			{Name: "editor", Input: map[string]any{"command": "str_replace", "path": "/ws/a.txt", "old_str": "two", "new_str": "deux ünï"}},
			{Name: "editor", Input: map[string]any{"command": "create", "path": ".GIT/config", "file_text": "x"}},
			{Name: "editor", Input: map[string]any{"command": "create", "path": "../escape", "file_text": "x"}},
			{Name: "shell", Input: map[string]any{"command": "make test"}},
		}},
		{Text: "Done."},
	}}
}

// TestOpenAILoop: the same loop over an OpenAI-compatible endpoint
// (streaming chat completions with tool calls).
func TestOpenAILoop(t *testing.T) {
	lower, upper := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(lower, "a.txt"), []byte("one\ntwo\n"), 0o644)
	srv, err := StartScripted("k-oa", loopScript())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var calls []string
	res, err := RunOpenAI(context.Background(), Config{
		BaseURL: srv.URL + "/v1", APIKey: "k-oa", Model: "scripted", Root: "/ws",
		Files: workspace.LayerFiles{Layers: []string{upper, lower}},
		Shell: func(ctx context.Context, c string) string { calls = append(calls, c); return "ok (exit 0)" },
	}, "[persona: tester] fix it")
	if err != nil {
		t.Fatal(err)
	}
	if res.Turns != 3 || res.Stop != "stop" || res.TokensOut == 0 {
		t.Errorf("result %+v", res)
	}
	if got, _ := os.ReadFile(filepath.Join(upper, "a.txt")); string(got) != "one\ndeux ünï\n" {
		t.Errorf("upper a.txt = %q", got)
	}
	if len(calls) != 1 {
		t.Errorf("shell calls %v", calls)
	}
}

// TestAnthropicLoop drives the loop against the scripted server speaking
// the real streaming protocol: the editor changes the upper layer only,
// the shell tool is called, refusals come back to the model as errors.
func TestAnthropicLoop(t *testing.T) {
	lower, upper := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(lower, "a.txt"), []byte("one\ntwo\n"), 0o644)
	os.MkdirAll(filepath.Join(lower, ".git"), 0o755)
	srv, err := StartScripted("k-test", map[string][]Step{"tester": {
		{Text: "Looking.", Tools: []ToolCall{{Name: "editor", Input: map[string]any{"command": "view", "path": "a.txt"}}}},
		{Tools: []ToolCall{
			{Name: "editor", Input: map[string]any{"command": "str_replace", "path": "/ws/a.txt", "old_str": "two", "new_str": "deux ünï"}},
			{Name: "editor", Input: map[string]any{"command": "create", "path": ".GIT/config", "file_text": "x"}},
			{Name: "editor", Input: map[string]any{"command": "create", "path": "../escape", "file_text": "x"}},
			{Name: "shell", Input: map[string]any{"command": "make test"}},
		}},
		{Text: "Done."},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var calls []string
	var events []string
	res, err := RunAnthropic(context.Background(), Config{
		BaseURL: srv.URL, APIKey: "k-test", Model: "scripted", Root: "/ws",
		Files: workspace.LayerFiles{Layers: []string{upper, lower}},
		Shell: func(ctx context.Context, c string) string { calls = append(calls, c); return "ok (exit 0)" },
		Event: func(d event.Payload) {
			if r, ok := d.(event.ToolResultData); ok {
				events = append(events, r.Output)
			}
		},
	}, "[persona: tester] fix it")
	if err != nil {
		t.Fatal(err)
	}
	if res.Turns != 3 || res.Stop != "end_turn" || res.TokensOut == 0 {
		t.Errorf("result %+v", res)
	}
	if got, _ := os.ReadFile(filepath.Join(upper, "a.txt")); string(got) != "one\ndeux ünï\n" {
		t.Errorf("upper a.txt = %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(lower, "a.txt")); string(got) != "one\ntwo\n" {
		t.Errorf("the lower layer changed: %q", got)
	}
	if len(calls) != 1 || calls[0] != "make test" {
		t.Errorf("shell calls %v", calls)
	}
	all := strings.Join(events, "\n")
	for _, want := range []string{"1\tone", ".git", `".."`} {
		if !strings.Contains(all, want) {
			t.Errorf("tool results lack %q:\n%s", want, all)
		}
	}
	if _, err := os.Stat(filepath.Join(upper, ".GIT")); err == nil {
		t.Errorf("the editor wrote under .GIT")
	}
}

func TestCheckEndpoint(t *testing.T) {
	for u, ok := range map[string]bool{
		"https://api.anthropic.com":   true,
		"http://127.0.0.1:8080":       true,
		"http://localhost:1":          true,
		"http://[::1]:9":              true,
		"http://api.example.com":      false,
		"https://user:pw@api.example": false,
		"ftp://127.0.0.1":             false,
	} {
		if err := CheckEndpoint(u); (err == nil) != ok {
			t.Errorf("%s: %v", u, err)
		}
	}
}
