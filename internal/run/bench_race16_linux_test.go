package run_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/record"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// BenchmarkRace16 races 16 forks of a small Go module whose agents each
// fix its bug at once, judged with `go test ./...` (--all: every fork is
// judged), and reports the time from the first agent's exit to the first
// verdict next to one judged test run (the median verdict's
// timings_ms.test) and the command run directly in a checkout, their
// ratio (baseline cached), and the peak memory of this process's cgroup above its level at
// the start (the judged runs' cgroups are below it; sampled every 20 ms,
// reported when the cgroup can be read). It prints the last race's timeline
// too, fork by fork in the order of their verdicts: when the agent stopped,
// when its patch went to the judge, how long it waited for a judge slot,
// the judge's fork and judged run, and the verdict:
//
//	go test -run '^$' -bench Race16 -benchtime 2x ./internal/run
func BenchmarkRace16(b *testing.B) {
	testutil.Need(b, "go")
	dir := goRepo(b)
	direct := exec.Command("go", "test", "-count=1", "./...")
	direct.Dir = dir
	direct.Run() // warm the standard library in the build cache
	c := exec.Command("go", "test", "-count=1", "./...")
	c.Dir = dir
	start := time.Now()
	c.Run()
	cmdTime := time.Since(start)
	s, err := workspace.Open(filepath.Join(b.TempDir(), "state"))
	if err != nil {
		b.Fatal(err)
	}
	cacheDir := filepath.Join(b.TempDir(), "cache")
	race := func(forks int) run.Options {
		return run.Options{Store: s, RunsDir: filepath.Join(b.TempDir(), "runs"), CacheDir: cacheDir, Repo: dir, Task: "fix", Forks: forks,
			Engine: engine.Command{Argv: []string{"/bin/sh", "-c", `sed -i 's/a - b/a + b/' add.go`}}, Test: "go test ./...", All: true}
	}
	// The baseline (cached per base) is made while the agents work; here
	// they stop at once, so it is made before the timed races.
	if _, _, err := run.Race(context.Background(), race(1)); err != nil {
		b.Fatal(err)
	}
	var toFirst, judged, total time.Duration
	var peak int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		o := race(16)
		stop := sampleMemory()
		start := time.Now()
		_, recDir, err := run.Race(context.Background(), o)
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		peak = max(peak, stop())
		var firstExit, firstVerdict time.Time
		f, _ := os.Open(filepath.Join(recDir, "events.jsonl"))
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var ev record.Event
			json.Unmarshal(sc.Bytes(), &ev)
			switch {
			case ev.Type == event.ForkExit && firstExit.IsZero():
				firstExit = ev.Time
			case ev.Type == event.VerdictGiven && firstVerdict.IsZero():
				firstVerdict = ev.Time
			}
		}
		f.Close()
		if firstVerdict.IsZero() {
			b.Fatalf("no verdict in %s", recDir)
		}
		toFirst += firstVerdict.Sub(firstExit)
		var tests []time.Duration
		for n := 0; n < 16; n++ {
			var v struct {
				Pass    bool
				Reason  string
				Timings struct{ Test int64 } `json:"timings_ms"`
			}
			data, _ := os.ReadFile(filepath.Join(recDir, "forks", strconv.Itoa(n), "verdict.json"))
			if json.Unmarshal(data, &v) != nil || !v.Pass {
				b.Fatalf("fork %d: no passing verdict: %s", n, v.Reason)
			}
			tests = append(tests, time.Duration(v.Timings.Test)*time.Millisecond)
		}
		sort.Slice(tests, func(i, j int) bool { return tests[i] < tests[j] })
		judged += tests[len(tests)/2]
		if i == b.N-1 {
			tl, err := raceTimeline(recDir, 16)
			if err != nil {
				b.Fatal(err)
			}
			fmt.Print(tl)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(cmdTime.Milliseconds()), "test-cmd-ms")
	b.ReportMetric(float64(judged.Milliseconds())/n, "judged-run-ms")
	b.ReportMetric(float64(toFirst.Milliseconds())/n, "first-verdict-ms")
	b.ReportMetric(float64(toFirst)/float64(judged), "first-verdict/judged-run-x")
	b.ReportMetric(float64(total.Milliseconds())/n, "race-ms")
	if peak > 0 {
		b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
	}
}

// raceTimeline is a race's timeline from its record: a row per fork, in the
// order of the verdicts, in milliseconds from the run's start.
func raceTimeline(recDir string, forks int) (string, error) {
	type row struct {
		n                        int
		stop, patch, verdict     time.Duration
		queue, fork, test, total int64
	}
	rows := make([]row, forks)
	for n := range rows {
		rows[n].n = n
	}
	data, err := os.ReadFile(filepath.Join(recDir, "events.jsonl"))
	if err != nil {
		return "", err
	}
	var t0 time.Time
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev record.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return "", err
		}
		if t0.IsZero() {
			t0 = ev.Time
		}
		if ev.Fork == nil || *ev.Fork < 0 || *ev.Fork >= forks {
			continue
		}
		r, at := &rows[*ev.Fork], ev.Time.Sub(t0)
		switch ev.Type {
		case event.ForkExit:
			r.stop = at
		case event.JudgeStart:
			r.patch = at
		case event.VerdictGiven:
			r.verdict = at
		}
	}
	for n := range rows {
		var v struct {
			Timings struct{ Queue, Fork, Test, Total int64 } `json:"timings_ms"`
		}
		data, err := os.ReadFile(filepath.Join(recDir, "forks", strconv.Itoa(n), "verdict.json"))
		if err != nil {
			return "", err
		}
		if err := json.Unmarshal(data, &v); err != nil {
			return "", err
		}
		rows[n].queue, rows[n].fork, rows[n].test, rows[n].total = v.Timings.Queue, v.Timings.Fork, v.Timings.Test, v.Timings.Total
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].verdict < rows[j].verdict })
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	var b strings.Builder
	fmt.Fprintf(&b, "race timeline (ms from the run's start; queue, fork, test: the verdict's timings_ms)\n")
	fmt.Fprintf(&b, "%5s %8s %8s %8s %8s %8s %8s %8s\n", "fork", "stopped", "patch", "queued", "fork", "test", "verdict", "stop→v")
	for _, r := range rows {
		fmt.Fprintf(&b, "%5d %8d %8d %8d %8d %8d %8d %8d\n", r.n, ms(r.stop), ms(r.patch), r.queue, r.fork, r.test, ms(r.verdict), ms(r.verdict-r.stop))
	}
	return b.String(), nil
}

// goRepo is a small Go module with a bug in add.go.
func goRepo(t testing.TB) string {
	dir := filepath.Join(t.TempDir(), "repo")
	os.MkdirAll(filepath.Join(dir, "mathx"), 0o755)
	files := map[string]string{
		"go.mod":            "module example.com/calc\n\ngo 1.22\n",
		"add.go":            "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a - b }\n",
		"add_test.go":       "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(Add(2, 3))\n\t}\n}\n",
		"mathx/mul.go":      "package mathx\n\nimport \"strconv\"\n\n// Mul multiplies, as text.\nfunc Mul(a, b int) string { return strconv.Itoa(a * b) }\n",
		"mathx/mul_test.go": "package mathx\n\nimport \"testing\"\n\nfunc TestMul(t *testing.T) {\n\tif Mul(2, 3) != \"6\" {\n\t\tt.Fatal(Mul(2, 3))\n\t}\n}\n",
	}
	for name, content := range files {
		os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
	}
	testutil.Git(t, dir, "init", "-q")
	testutil.Git(t, dir, "add", "-A")
	testutil.Git(t, dir, "commit", "-qm", "base")
	return dir
}

// sampleMemory samples this process's memory cgroup (v2 memory.current,
// or v1 memory.usage_in_bytes; children included) until the returned func
// is called, which returns the peak above the first sample (0 when the
// cgroup cannot be read).
func sampleMemory() (stop func() int64) {
	file := ""
	data, _ := os.ReadFile("/proc/self/cgroup")
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			file = filepath.Join("/sys/fs/cgroup", f[2], "memory.current")
		case hasMemory(f[1]):
			file = filepath.Join("/sys/fs/cgroup/memory", f[2], "memory.usage_in_bytes")
		}
		if _, err := os.Stat(file); err == nil {
			break
		}
		file = ""
	}
	read := func() int64 {
		d, err := os.ReadFile(file)
		if err != nil {
			return -1
		}
		v, _ := strconv.ParseInt(strings.TrimSpace(string(d)), 10, 64)
		return v
	}
	if file == "" || read() < 0 {
		return func() int64 { return 0 }
	}
	base, top := read(), int64(0)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				top = max(top, read()-base)
			}
		}
	}()
	return func() int64 {
		close(done)
		wg.Wait()
		return top
	}
}

func hasMemory(controllers string) bool {
	for _, c := range strings.Split(controllers, ",") {
		if c == "memory" {
			return true
		}
	}
	return false
}
