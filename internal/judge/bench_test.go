package judge_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// BenchmarkJudge16 judges 16 patches against one base (baseline cached)
// with a fast test command, and reports the judge's own overhead per patch
// beyond the command's own time (measured unconfined on a checkout), and
// the speed-up from judging in parallel, and the CPU time per patch (the
// judge's own and every process it waited for):
//
//	go test -run '^$' -bench Judge16 -benchtime 3x ./internal/judge
func BenchmarkJudge16(b *testing.B) {
	files := map[string]string{
		"lib.sh":   "add() { echo $(($1 - $2)); }\n",
		"check.sh": "#!/bin/sh\n. ./lib.sh\np=0; f=0\n[ \"$(add 2 3)\" = 5 ] && p=$((p+1)) || f=$((f+1))\n[ \"$(add 0 0)\" = 0 ] && p=$((p+1)) || f=$((f+1))\necho \"$p passed, $f failed\"\n[ $f = 0 ]\n",
	}
	repo := fixture(b, files)
	patch := makePatch(b, repo, map[string]edit{"lib.sh": {content: "add() { echo $(($1 + $2)); }\n"}})
	patches := make([][]byte, 16)
	for i := range patches {
		patches[i] = patch
	}
	cmdTime := medianOf(5, func() {
		c := exec.Command("/bin/sh", "check.sh")
		c.Dir = repo
		c.Run()
	})
	s, err := workspace.Open(filepath.Join(b.TempDir(), "state"))
	if err != nil {
		b.Fatal(err)
	}
	o := judge.Options{Store: s, CacheDir: filepath.Join(b.TempDir(), "cache"), Repo: repo, Test: "/bin/sh check.sh"}
	if _, err := judge.Judge(context.Background(), o, patches[:1]); err != nil { // warm: pid 1 and baseline
		b.Fatal(err)
	}
	var cpu time.Duration // of the serial runs
	run := func(parallel int) time.Duration {
		o.Parallel = parallel
		c0 := testutil.CPUTime()
		defer func() {
			if parallel == 1 {
				cpu += testutil.CPUTime() - c0
			}
		}()
		start := time.Now()
		vs, err := judge.Judge(context.Background(), o, patches)
		if err != nil {
			b.Fatal(err)
		}
		for _, v := range vs {
			if v.Verdict != event.Pass {
				b.Fatalf("the fix did not pass: %s", v.Reason)
			}
		}
		return time.Since(start)
	}
	var serial, par []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		serial = append(serial, run(1))
		par = append(par, run(runtime.NumCPU()))
	}
	s1, sn := median(serial), median(par)
	perPatch := s1 / 16
	b.ReportMetric(float64(cmdTime.Microseconds())/1000, "cmd-ms")
	b.ReportMetric(float64(perPatch.Microseconds())/1000, "judge-ms/patch")
	b.ReportMetric(float64((perPatch-cmdTime).Microseconds())/1000, "overhead-ms/patch")
	b.ReportMetric(float64(s1)/float64(sn), "parallel-speedup")
	b.ReportMetric(cpu.Seconds()*1000/float64(b.N)/16, "cpu-ms/patch")
}

func medianOf(n int, f func()) time.Duration {
	var d []time.Duration
	for i := 0; i < n; i++ {
		s := time.Now()
		f()
		d = append(d, time.Since(s))
	}
	return median(d)
}

func median(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}
