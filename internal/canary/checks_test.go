package canary

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestGitCheckCanFail: no policy knob makes a fork's .git writable (the
// sandbox refuses), so the .git check is shown to fail on trees where the
// write happened: a new file in .git, and a changed .git/config.
func TestGitCheckCanFail(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	os.MkdirAll(filepath.Join(base, ".git"), 0o755)
	os.WriteFile(filepath.Join(base, ".git", "config"), []byte("[core]\n"), 0o644)
	for name, mutate := range map[string]func(dir string){
		"untouched": func(string) {},
		"new file":  func(dir string) { os.WriteFile(filepath.Join(dir, gitFile), []byte("x"), 0o644) },
		"config": func(dir string) {
			os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("[core]\nhooksPath = /tmp\n"), 0o644)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fork := t.TempDir()
			os.MkdirAll(filepath.Join(fork, ".git"), 0o755)
			os.WriteFile(filepath.Join(fork, ".git", "config"), []byte("[core]\n"), 0o644)
			mutate(fork)
			c := checker{files: workspace.LayerFiles{Layers: []string{fork}}, snapshot: base}
			if got, want := c.gitReadOnly(t.Context()).OK, name == "untouched"; got != want {
				t.Fatalf("ok = %v, want %v (%s)", got, want, c.gitReadOnly(t.Context()).Detail)
			}
		})
	}
}
