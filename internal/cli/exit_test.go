package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/cli"
	"github.com/forkbomb/forkbomb/internal/cli/full"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestInterruptedIsOneCode: whichever verb Ctrl-C or SIGTERM stops (the
// signals cancel Run's context), the status is cli.ExitInterrupted.
func TestInterruptedIsOneCode(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("FORKBOMB_HOME", filepath.Join(dir, "state"))
	repo := filepath.Join(dir, "repo")
	os.MkdirAll(repo, 0o755)
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644)
	testutil.Git(t, repo, "init", "-q")
	testutil.Git(t, repo, "add", "-A")
	testutil.Git(t, repo, "-c", "user.name=t", "-c", "user.email=t@l", "commit", "-qm", "base")
	patch := filepath.Join(dir, "p.patch")
	os.WriteFile(patch, nil, 0o644)

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{
		{"run", "--repo", repo, "--forks", "1", "--agent", "true", "--test", "true", "x"},
		{"judge", "--repo", repo, "--patch", patch, "--test", "true"},
		{"workspace", "new", "w", "--repo", repo},
		{"sandbox", "--workdir", dir, "--", "true"},
	} {
		t.Run(args[0], func(t *testing.T) {
			var stderr bytes.Buffer
			code := cli.Run(cancelled, args, cli.IO{In: strings.NewReader(""), Out: io.Discard, Err: &stderr}, full.Options())
			if code != cli.ExitInterrupted {
				t.Errorf("%v: status %d, want %d; stderr: %s", args, code, cli.ExitInterrupted, stderr.String())
			}
			if !strings.Contains(stderr.String(), "interrupted") {
				t.Errorf("%v: stderr %q does not say interrupted", args, stderr.String())
			}
		})
	}

	// A command interrupted while it runs: cancelled once it says it has
	// started (a readiness line, not a sleep).
	t.Run("sandbox running", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		pr, pw := io.Pipe()
		done := make(chan int, 1)
		var stderr bytes.Buffer
		go func() {
			done <- cli.Run(ctx, []string{"sandbox", "--workdir", dir, "--", "sh", "-c", "echo ready; exec sleep 300"},
				cli.IO{In: strings.NewReader(""), Out: pw, Err: &stderr}, cli.Options{})
			pw.Close()
		}()
		line, err := bufio.NewReader(pr).ReadString('\n')
		if err != nil || line != "ready\n" {
			t.Fatalf("no readiness line: %q, %v (status %d?)", line, err, <-done)
		}
		cancel()
		go io.Copy(io.Discard, pr)
		if code := <-done; code != cli.ExitInterrupted {
			t.Errorf("status %d, want %d; stderr: %s", code, cli.ExitInterrupted, stderr.String())
		}
	})
}
