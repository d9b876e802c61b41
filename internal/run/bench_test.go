package run_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/record"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// BenchmarkRace8 races 8 forks whose agents do nothing and reports, from
// the record's events, forkbomb's own overhead: start to all forks
// running, and last agent exit to last verdict, next to the test
// command's own time (unconfined, on a checkout):
//
//	go test -run '^$' -bench Race8 -benchtime 3x ./internal/run
func BenchmarkRace8(b *testing.B) {
	dir := repo(b)
	cmdStart := time.Now()
	c := exec.Command("/bin/sh", "check.sh")
	c.Dir = dir
	c.Run()
	cmdTime := time.Since(cmdStart)
	s, _ := workspace.Open(filepath.Join(b.TempDir(), "state"))
	var toRunning, toVerdicts, total time.Duration
	for i := 0; i < b.N; i++ {
		o := run.Options{Store: s, RunsDir: filepath.Join(b.TempDir(), "runs"), CacheDir: filepath.Join(b.TempDir(), "cache"),
			Repo: dir, Task: "nothing", Forks: 8, Engine: engine.Command{Argv: []string{"true"}}, Test: "/bin/sh check.sh", All: true}
		start := time.Now()
		_, recDir, err := run.Race(context.Background(), o)
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		var runStart, lastStart, lastExit, lastVerdict time.Time
		f, _ := os.Open(filepath.Join(recDir, "events.jsonl"))
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var ev record.Event
			json.Unmarshal(sc.Bytes(), &ev)
			switch ev.Type {
			case event.RunStart:
				runStart = ev.Time
			case event.ForkStart:
				lastStart = ev.Time
			case event.ForkExit:
				lastExit = ev.Time
			case event.VerdictGiven:
				lastVerdict = ev.Time
			}
		}
		f.Close()
		toRunning += lastStart.Sub(runStart)
		toVerdicts += lastVerdict.Sub(lastExit)
	}
	n := float64(b.N)
	b.ReportMetric(float64(cmdTime.Microseconds())/1000, "test-cmd-ms")
	b.ReportMetric(float64(toRunning.Microseconds())/1000/n, "start-to-all-running-ms")
	b.ReportMetric(float64(toVerdicts.Microseconds())/1000/n, "last-exit-to-verdicts-ms")
	b.ReportMetric(float64(total.Microseconds())/1000/n, "race-ms")
}
