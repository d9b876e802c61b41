package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestEditorAttacks: every way out of the workspace or into git metadata
// is refused and leaves the host unchanged; ordinary edits still work.
func TestEditorAttacks(t *testing.T) {
	base := t.TempDir()
	lower, upper, outside := filepath.Join(base, "lower"), filepath.Join(base, "upper"), filepath.Join(base, "outside")
	for _, d := range []string{lower, upper, outside} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(outside, "secret"), []byte("host"), 0o644)
	os.WriteFile(filepath.Join(lower, "ok.txt"), []byte("a\n"), 0o644)
	os.MkdirAll(filepath.Join(lower, ".git", "hooks"), 0o755)
	os.Symlink(outside, filepath.Join(lower, "link-out"))      // a symlink out of the fork
	os.Symlink(".git/hooks", filepath.Join(lower, "link-git")) // a symlink into .git
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(upper, "file-link"))
	os.WriteFile(filepath.Join(upper, "hard.txt"), []byte("x"), 0o644) // a hard link to a file elsewhere
	os.Link(filepath.Join(upper, "hard.txt"), filepath.Join(outside, "hard-twin"))
	tree := workspace.LayerFiles{Layers: []string{upper, lower}}
	const root = "/ws"
	call := func(in map[string]any) (string, bool) {
		raw, _ := json.Marshal(in)
		return edit(t.Context(), tree, root, raw)
	}
	attacks := []map[string]any{
		{"command": "create", "path": "../outside/secret", "file_text": "pwned"},
		{"command": "create", "path": "/ws/../outside/secret", "file_text": "pwned"},
		{"command": "create", "path": base + "/outside/secret", "file_text": "pwned"},
		{"command": "create", "path": "link-out/secret", "file_text": "pwned"},
		{"command": "create", "path": "link-git/pre-commit", "file_text": "pwned"},
		{"command": "create", "path": ".git/hooks/pre-commit", "file_text": "pwned"},
		{"command": "create", "path": ".GIT/hooks/pre-commit", "file_text": "pwned"},
		{"command": "create", "path": "sub/.Git/config", "file_text": "pwned"},
		{"command": "str_replace", "path": "file-link", "old_str": "host", "new_str": "pwned"},
		{"command": "create", "path": "file-link", "file_text": "pwned"},
		{"command": "create", "path": "hard.txt", "file_text": "pwned"},
		{"command": "view", "path": "link-out/secret"},
		{"command": "view", "path": "../outside/secret"},
	}
	for _, a := range attacks {
		out, isErr := call(a)
		if !isErr {
			t.Errorf("LEAK: %v was not refused: %s", a, out)
		}
		if strings.Contains(out, "host") && a["command"] == "view" {
			t.Errorf("LEAK: %v read a host file", a)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(outside, "secret")); string(got) != "host" {
		t.Errorf("LEAK: a host file changed: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(outside, "hard-twin")); string(got) != "x" {
		t.Errorf("LEAK: written through a hard link: %q", got)
	}
	if _, err := os.Stat(filepath.Join(lower, ".git", "hooks", "pre-commit")); err == nil {
		t.Errorf("LEAK: a hook was planted")
	}
	// ordinary edits
	if out, isErr := call(map[string]any{"command": "insert", "path": "ok.txt", "insert_line": 1, "new_str": "b"}); isErr {
		t.Fatalf("insert: %s", out)
	}
	if out, isErr := call(map[string]any{"command": "create", "path": "new/dir/f.txt", "file_text": "n"}); isErr {
		t.Fatalf("create: %s", out)
	}
	if got, _ := os.ReadFile(filepath.Join(upper, "ok.txt")); string(got) != "a\nb\n" {
		t.Errorf("insert result %q", got)
	}
	if out, _ := call(map[string]any{"command": "view", "path": "."}); !strings.Contains(out, "new/") || !strings.Contains(out, "ok.txt") {
		t.Errorf("merged listing: %s", out)
	}
}

// TestTreeWhiteouts: the editor reads a fork as overlayfs would: a
// deleted file stays deleted, a folder replaced over a whiteout hides the
// lower one's content.
func TestTreeWhiteouts(t *testing.T) {
	lower, upper := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(lower, "d"), 0o755)
	os.WriteFile(filepath.Join(lower, "gone.txt"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(lower, "d", "old.txt"), []byte("x"), 0o644)
	if err := mknodWhiteout(filepath.Join(upper, "gone.txt")); err != nil {
		testutil.SkipNotApplicable(t, "cannot make a character-device whiteout without CAP_MKNOD (the root run covers it): %v", err)
	}
	mknodWhiteout(filepath.Join(upper, "d"))
	tree := workspace.LayerFiles{Layers: []string{upper, lower}}
	if _, _, err := tree.Read(t.Context(), "gone.txt", MaxEditFile); err == nil {
		t.Errorf("a whited-out file is readable")
	}
	if err := tree.Write(t.Context(), "d/new.txt", []byte("n"), 0o644); err != nil {
		t.Fatal(err)
	}
	names, err := tree.List(t.Context(), "d", 100)
	if err != nil || strings.Join(names, ",") != "new.txt" {
		t.Errorf("d after re-creating it over a whiteout: %v %v (want only new.txt)", names, err)
	}
}
