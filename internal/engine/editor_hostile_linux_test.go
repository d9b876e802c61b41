package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestEditorHostileFiles: the editor runs in forkbomb's own process on
// files the fork's shell made. A FIFO (also one planted at the name the
// old editor wrote through), a sparse terabyte, a symlink or hard link at
// a temporary name, and a lower-layer symlink under an upper folder must
// neither hang forkbomb, nor exhaust its memory, nor lead a write into a
// nested repository's .git or a read out of the fork.
func TestEditorHostileFiles(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	lower, upper, host := filepath.Join(base, "lower"), filepath.Join(base, "upper"), filepath.Join(base, "host")
	for _, d := range []string{lower, upper, host, filepath.Join(upper, "sub", ".git"), filepath.Join(upper, "d"), filepath.Join(lower, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gitConfig := filepath.Join(upper, "sub", ".git", "config")
	os.WriteFile(gitConfig, []byte("[core]\n"), 0o644)
	os.WriteFile(filepath.Join(host, "host-only-name"), nil, 0o644)
	os.WriteFile(filepath.Join(upper, "d", "upper-only-name"), nil, 0o644)
	os.WriteFile(filepath.Join(upper, "FILE"), []byte("old text\n"), 0o644)
	os.WriteFile(filepath.Join(upper, "LINKED"), []byte("old text\n"), 0o644)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(unix.Mkfifo(filepath.Join(upper, "fifo"), 0o644))
	must(unix.Mkfifo(filepath.Join(upper, "FIFOED.forkbomb-edit"), 0o644)) // the old fixed temporary name
	os.WriteFile(filepath.Join(upper, "FIFOED"), []byte("old text\n"), 0o644)
	must(os.Symlink(gitConfig, filepath.Join(upper, "FILE.forkbomb-edit")))
	must(os.Link(gitConfig, filepath.Join(upper, "LINKED.forkbomb-edit")))
	must(os.Symlink(host, filepath.Join(lower, "d"))) // upper d/ is a folder over a lower symlink
	big, err := os.Create(filepath.Join(upper, "big"))
	must(err)
	must(big.Truncate(1 << 40))
	big.Close()

	tree := workspace.LayerFiles{Layers: []string{upper, lower}}
	call := func(in map[string]any) (string, bool) {
		raw, _ := json.Marshal(in)
		done := make(chan struct{})
		var out string
		var isErr bool
		go func() { defer close(done); out, isErr = edit(t.Context(), tree, "/ws", raw) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("the editor hung on %v", in)
		}
		return out, isErr
	}
	for _, in := range []map[string]any{
		{"command": "view", "path": "fifo"},
		{"command": "str_replace", "path": "fifo", "old_str": "a", "new_str": "b"},
		{"command": "view", "path": "big", "view_range": []int{1, 2}},
	} {
		if out, isErr := call(in); !isErr {
			t.Errorf("%v was not refused: %.200s", in, out)
		}
	}
	if out, _ := call(map[string]any{"command": "view", "path": "big"}); !strings.Contains(out, "1.0 TiB") {
		t.Errorf("the refusal of a sparse terabyte should say its size: %s", out)
	}
	for _, name := range []string{"FILE", "LINKED", "FIFOED"} {
		if out, isErr := call(map[string]any{"command": "str_replace", "path": name, "old_str": "old", "new_str": "pwned"}); isErr {
			t.Errorf("str_replace %s: %s", name, out)
		}
		if got, _ := os.ReadFile(filepath.Join(upper, name)); string(got) != "pwned text\n" {
			t.Errorf("%s = %q after the edit", name, got)
		}
	}
	if got, _ := os.ReadFile(gitConfig); string(got) != "[core]\n" {
		t.Errorf("LEAK: a nested .git/config was written through the temporary name: %q", got)
	}
	// (the upper folder's own file listed: the view ran and listed d)
	if out, isErr := call(map[string]any{"command": "view", "path": "d"}); isErr || !strings.Contains(out, "upper-only-name") || strings.Contains(out, "host-only-name") {
		t.Errorf("LEAK or no listing: d's listing (error %v) should hold upper-only-name and not host-only-name: %s", isErr, out)
	}
	// Positive control: the planted temporary name does lead into .git.
	if target, _ := os.Readlink(filepath.Join(upper, "FILE.forkbomb-edit")); target != gitConfig {
		t.Errorf("control: the planted link is gone (%q), the check proves nothing", target)
	}
}
