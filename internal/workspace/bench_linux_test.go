package workspace_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// BenchmarkForkExec: forks made and given their first command one after
// another, against the same number made at once (issue 24's row "fork +
// first command, forks made one after another": the goal is within 1.2×
// of parallel per fork). Each iteration makes 4 forks of a pid 1 and runs
// one command that writes in each, serial then parallel, interleaved;
// it reports ms per fork of each and their ratio.
//
//	go test -run '^$' -bench ForkExec -benchtime 10x ./internal/workspace
func BenchmarkForkExec(b *testing.B) {
	const forks = 4
	s, err := workspace.Open(filepath.Join(b.TempDir(), "state"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.New(ctx, "p1", workspace.NewOptions{Repo: userRepo(b)}); err != nil {
		b.Fatal(err)
	}
	n := 0
	one := func() {
		n++
		name := fmt.Sprintf("f%d", n)
		if _, err := s.Fork(ctx, "p1", name); err != nil {
			b.Fatal(err)
		}
		res, err := s.Exec(ctx, name, sandbox.Policy{Command: []string{"/bin/sh", "-c", "echo x > new.txt"}}, sandbox.Stdio{})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("exec: %v %+v", err, res)
		}
	}
	var serial, parallel, serialCPU, parallelCPU time.Duration
	for b.Loop() {
		t0, c0 := time.Now(), testutil.CPUTime()
		for range forks {
			one()
		}
		serial += time.Since(t0)
		serialCPU += testutil.CPUTime() - c0
		t0, c0 = time.Now(), testutil.CPUTime()
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range forks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mu.Lock() // names only
				n++
				name := fmt.Sprintf("f%d", n)
				mu.Unlock()
				if _, err := s.Fork(ctx, "p1", name); err != nil {
					b.Error(err)
					return
				}
				if res, err := s.Exec(ctx, name, sandbox.Policy{Command: []string{"/bin/sh", "-c", "echo x > new.txt"}}, sandbox.Stdio{}); err != nil || res.ExitCode != 0 {
					b.Errorf("exec: %v %+v", err, res)
				}
			}()
		}
		wg.Wait()
		parallel += time.Since(t0)
		parallelCPU += testutil.CPUTime() - c0
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N*forks) }
	b.ReportMetric(per(serial), "ms/fork-serial")
	b.ReportMetric(per(parallel), "ms/fork-parallel")
	b.ReportMetric(per(serial)/per(parallel), "serial/parallel")
	// CPU per fork, and the cores each way kept busy (CPU ÷ wall): when a
	// fork costs the same CPU both ways, serial/parallel is
	// parallel-cores ÷ serial-cores — at most the machine's cores ÷
	// serial-cores.
	b.ReportMetric(per(serialCPU), "cpu-ms/fork-serial")
	b.ReportMetric(per(parallelCPU), "cpu-ms/fork-parallel")
	b.ReportMetric(float64(serialCPU)/float64(serial), "serial-cores")
	b.ReportMetric(float64(parallelCPU)/float64(parallel), "parallel-cores")
}
