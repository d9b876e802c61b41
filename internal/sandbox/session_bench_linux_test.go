package sandbox_test

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// A turn of an agent: 30 shell commands in one fork, shaped as the api
// engine's shell tool runs them (/bin/sh -c, output to a buffer through a
// cap). One run of
//
//	go test -run '^$' -bench Turn30 -count 5 ./internal/sandbox
//
// interleaves the three ways: a sandbox.Run per command (today's shell
// tool), one Session for the turn (its Start and Close included), and a
// bubblewrap start per command, the peer. Each reports wall time per turn
// and cpu-ms/turn: the CPU of this process and every process it waited
// for (the inits, and through them the commands), from getrusage.

const turnCommands = 30

var turnArgv = []string{"/bin/sh", "-c", "true"}

// turnBench runs turn b.N times and reports its CPU per turn.
func turnBench(b *testing.B, turn func()) {
	b.Helper()
	turn() // warm: page cache, the binary, the first cgroup
	start := testutil.CPUTime()
	n := 0
	for b.Loop() {
		turn()
		n++
	}
	b.ReportMetric(float64(testutil.CPUTime()-start)/float64(time.Millisecond)/float64(n), "cpu-ms/turn")
}

func BenchmarkTurn30(b *testing.B) {
	ctx := context.Background()
	wd := b.TempDir()
	check := func(res *sandbox.Result, err error) {
		if err != nil {
			b.Fatal(err)
		}
		if res.ExitCode != 0 {
			b.Fatalf("exit %d", res.ExitCode)
		}
	}
	b.Run("run", func(b *testing.B) {
		p := sandbox.Policy{Command: turnArgv, Workdir: wd, Timeout: time.Minute, MaxOutput: 64 << 10, Init: testInit(b)}
		turnBench(b, func() {
			for i := 0; i < turnCommands; i++ {
				var out bytes.Buffer
				check(sandbox.Run(ctx, p, sandbox.Stdio{Stdout: &out, Stderr: &out}))
			}
		})
	})
	b.Run("session", func(b *testing.B) {
		turnBench(b, func() {
			s, err := sandbox.Start(ctx, sandbox.Policy{Workdir: wd, Init: testInit(b)})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			for i := 0; i < turnCommands; i++ {
				var out bytes.Buffer
				check(s.Run(ctx, sandbox.Cmd{Argv: turnArgv, Timeout: time.Minute, MaxOutput: 64 << 10}, sandbox.Stdio{Stdout: &out, Stderr: &out}))
			}
		})
	})
	b.Run("bwrap", func(b *testing.B) {
		testutil.Need(b, "bwrap")
		bwrap, err := exec.LookPath("bwrap")
		if err != nil {
			b.Fatal(err)
		}
		args := append(append([]string{}, startBenchBwrapArgs[:len(startBenchBwrapArgs)-1]...), turnArgv...)
		if out, err := exec.Command(bwrap, args...).CombinedOutput(); err != nil {
			testutil.SkipOrFail(b, "bwrap cannot run here: %v: %s", err, bytes.TrimSpace(out))
		}
		turnBench(b, func() {
			for i := 0; i < turnCommands; i++ {
				var out bytes.Buffer
				cmd := exec.Command(bwrap, args...)
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}
