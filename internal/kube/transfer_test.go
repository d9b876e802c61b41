package kube

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOutputRunHostileName: what the fork left at the output file's name
// (its /tmp is the fork's too) is never written through or waited on. The
// pod's shell text runs here under /bin/sh with the name moved into a
// temp dir; the victim file is checked from outside, after.
func TestOutputRunHostileName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		make func(t *testing.T, out, victim string)
	}{
		{"fresh, positive control", func(*testing.T, string, string) {}},
		{"old file", func(t *testing.T, out, _ string) { must(t, os.WriteFile(out, []byte("stale"), 0o600)) }},
		{"link to a file", func(t *testing.T, out, victim string) { must(t, os.Symlink(victim, out)) }},
		{"dangling link", func(t *testing.T, out, victim string) {
			must(t, os.Symlink(victim+".new", out))
		}},
		{"fifo", func(t *testing.T, out, _ string) { must(t, syscall.Mkfifo(out, 0o600)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			out, victim := filepath.Join(dir, "out"), filepath.Join(dir, "victim")
			must(t, os.WriteFile(victim, []byte("keep"), 0o600))
			c.make(t, out, victim)
			text := strings.ReplaceAll(outputRun(`echo "secret $1"`), outputFile, out)
			// the bound of a wait the old text would make forever (a FIFO)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "/bin/sh", "-c", text, "sh", "arg")
			// the whole group is killed: a subshell stuck in open holds stdout
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			cmd.WaitDelay = 10 * time.Second
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("run: %v\n%s", err, stderr.String())
			}
			data, ok := checkTrailer(stdout.Bytes())
			if !ok || string(data) != "secret arg\n" {
				t.Errorf("sent %q (trailer ok %v)", stdout.String(), ok)
			}
			if b, err := os.ReadFile(victim); err != nil || string(b) != "keep" {
				t.Errorf("victim now %q %v", b, err)
			}
			if _, err := os.Lstat(victim + ".new"); err == nil {
				t.Errorf("a file was made where the dangling link pointed")
			}
			if st, err := os.Lstat(out); err != nil || !st.Mode().IsRegular() {
				t.Errorf("output file: %v %v", st, err)
			}
		})
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
