package worldrace

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/world"
)

func saveWorld(t *testing.T, p, file, content string) {
	t.Helper()
	w := world.New()
	if err := w.FS.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.Save(p); err != nil {
		t.Fatal(err)
	}
}

// TestConfinedCopyIsHostile attacks from inside the agent's sandbox, where the world's copy
// is writable, and checks from outside: the copy replaces the world only when it is a regular
// file that decodes (the positive control); a link to a host world, garbage or a FIFO leave
// the world's bytes exactly as they were, and the world's own folder is neither visible nor
// writable from inside.
func TestConfinedCopyIsHostile(t *testing.T) {
	outside, unmasked := testutil.OutsideDir(t)
	// A valid world on the host the agent must not be able to smuggle in through a link.
	secret := filepath.Join(outside, "secret.world")
	saveWorld(t, secret, "/work/secret", "host\n")
	goodDir := t.TempDir()
	good := filepath.Join(goodDir, "good.world")
	saveWorld(t, good, "/work/good", "agent\n")
	for _, tc := range []struct {
		name, script string
		replaced     bool
	}{
		{"valid copy (control)", "cp " + good + " world.world.new && mv world.world.new world.world", true},
		{"symlink to a host world", "rm world.world && ln -s " + secret + " world.world", false},
		{"garbage", "echo '{\"format\":' > world.world", false},
		{"fifo", "rm world.world && mkfifo world.world", false},
		{"world folder", "ls -a \"$WORLDDIR\"; cat \"$WORLDDIR/w.world\"; echo x > \"$WORLDDIR/planted\"", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wdir, err := os.MkdirTemp(outside, "world-")
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(wdir, "w.world")
			saveWorld(t, file, "/work/mine", "user\n")
			before, _ := os.ReadFile(file)
			c, err := NewConfined(file, world.DefaultLimits, "")
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var out bytes.Buffer
			p := sandbox.Policy{Command: []string{"/bin/sh", "-c", tc.script}, Timeout: time.Minute,
				ReadOnly: []string{goodDir}, SetEnv: []string{"WORLDDIR=" + wdir}}
			_, err = c.Exec(context.Background(), p, sandbox.Stdio{Stdout: &out, Stderr: &out})
			after, _ := os.ReadFile(file)
			if tc.replaced {
				w, lerr := world.Load(file, 0)
				if err != nil || lerr != nil {
					t.Fatalf("control: %v %v\n%s", err, lerr, out.String())
				}
				if _, serr := w.FS.ReadFile("/work/good"); serr != nil {
					t.Errorf("control: the agent's copy did not replace the world")
				}
				return
			}
			if !bytes.Equal(before, after) {
				t.Errorf("ESCAPE: the world's bytes changed (exec err %v)\n%s", err, out.String())
			}
			if _, err := os.Lstat(filepath.Join(wdir, "planted")); err == nil {
				t.Errorf("ESCAPE: the agent wrote in the world's folder")
			}
			if unmasked && strings.Contains("\n"+out.String(), "\nw.world\n") {
				t.Errorf("ESCAPE: the agent saw the world's folder:\n%s", out.String())
			}
		})
	}
	// Control for the folder case: the same listing without the Hide sees the world, so the
	// folder is one the sandbox would otherwise show.
	if unmasked {
		wdir, _ := os.MkdirTemp(outside, "world-")
		saveWorld(t, filepath.Join(wdir, "w.world"), "/work/mine", "user\n")
		var out bytes.Buffer
		if _, err := sandbox.Run(context.Background(), sandbox.Policy{Command: []string{"ls", "-a", wdir}, Workdir: t.TempDir(), Timeout: time.Minute},
			sandbox.Stdio{Stdout: &out, Stderr: &out}); err != nil || !strings.Contains(out.String(), "w.world") {
			t.Errorf("control: without the Hide the folder is not visible (%v): %s", err, out.String())
		}
	}
}
