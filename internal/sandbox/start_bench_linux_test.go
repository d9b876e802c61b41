package sandbox_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// Start-up benchmarks: the cost of running /bin/true bare, confined by
// sandbox.Run and confined by bubblewrap, so that one run of
//
//	go test -run '^$' -bench Start ./internal/sandbox
//
// compares them under the same conditions. The sandbox's own overhead is
// BenchmarkStartSandbox minus BenchmarkStartBare; bench/sandbox-start.sh
// measures the same through the forkbomb binary. Here the init is the test
// binary re-executed (see TestMain), which is larger than forkbomb and so a
// little slower to exec.

// startBenchTrue is the command every start-up benchmark runs.
const startBenchTrue = "/bin/true"

// startBenchBwrapArgs is bwrap's equivalent of forkbomb's default
// confinement, kept identical to the one in bench/sandbox-start.sh.
var startBenchBwrapArgs = []string{
	"--unshare-all", "--die-with-parent",
	"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
	startBenchTrue,
}

func startBenchDevNull(b *testing.B) *os.File {
	b.Helper()
	f, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return f
}

// startBenchExec runs argv to completion b.N times, its streams on /dev/null.
func startBenchExec(b *testing.B, argv ...string) {
	b.Helper()
	devnull := startBenchDevNull(b)
	for b.Loop() {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
		if err := cmd.Run(); err != nil {
			b.Fatalf("%q: %v", argv, err)
		}
	}
}

func BenchmarkStartBare(b *testing.B) {
	startBenchExec(b, startBenchTrue)
}

func BenchmarkStartSandbox(b *testing.B) {
	ctx := context.Background()
	// With the slim init, as forkbomb runs it.
	p := sandbox.Policy{Command: []string{startBenchTrue}, Workdir: b.TempDir(), Init: testInit(b)}
	// An *os.File is handed to the command as is, as the CLI does with its
	// own streams ("devnull"); any other io.Writer, io.Discard included,
	// costs a pipe and a copying goroutine per stream ("discard").
	for _, c := range []struct {
		name  string
		stdio func() sandbox.Stdio
	}{
		{"devnull", func() sandbox.Stdio {
			f := startBenchDevNull(b)
			return sandbox.Stdio{Stdin: f, Stdout: f, Stderr: f}
		}},
		{"discard", func() sandbox.Stdio {
			return sandbox.Stdio{Stdout: io.Discard, Stderr: io.Discard}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			stdio := c.stdio()
			res, err := sandbox.Run(ctx, p, stdio)
			if err != nil {
				b.Fatalf("sandbox.Run: %v", err)
			}
			if res.Mode != sandbox.ModeNamespaces {
				b.Logf("backend is %s, not namespaces (warnings: %q)", res.Mode, res.Warnings)
			}
			for b.Loop() { // the first call resets the timer
				res, err := sandbox.Run(ctx, p, stdio)
				if err != nil {
					b.Fatalf("sandbox.Run: %v", err)
				}
				if res.ExitCode != 0 {
					b.Fatalf("%s exited %d (warnings: %q)", startBenchTrue, res.ExitCode, res.Warnings)
				}
			}
		})
	}
}

func BenchmarkStartBwrap(b *testing.B) {
	testutil.Need(b, "bwrap")
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command(bwrap, startBenchBwrapArgs...).CombinedOutput(); err != nil {
		testutil.SkipOrFail(b, "bwrap cannot run here: %v: %s", err, bytes.TrimSpace(out))
	}
	startBenchExec(b, append([]string{bwrap}, startBenchBwrapArgs...)...)
}
