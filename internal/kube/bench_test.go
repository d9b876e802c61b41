package kube

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/record"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// BenchmarkBackends races the same task — 4 forks of the fixture, each
// agent fixing it at once, judged here — on the local backend and on the
// test cluster, and reports for each forks per second (forks / time until
// the last fork's agent ended) and the time from the run's start to its
// first verdict, and the ratios kubernetes/local.
//
//	go test -run '^$' -bench Backends -benchtime 3x ./internal/kube
func BenchmarkBackends(b *testing.B) {
	benchBackends(b, func(*run.Options) {})
}

// BenchmarkBackendsAPI is BenchmarkBackends with the api engine: each
// fork's model (the scripted server, on loopback) runs a command, edits
// the value with the editor and stops — its loop here on both backends,
// its command and edit in the fork's sandbox or its pod.
//
//	go test -run '^$' -bench BackendsAPI -benchtime 3x ./internal/kube
func BenchmarkBackendsAPI(b *testing.B) {
	key := "sk-bench-" + strings.Repeat("b", 24)
	srv, err := engine.StartScripted(key, map[string][]engine.Step{"": {
		{Tools: []engine.ToolCall{{Name: "shell", Input: map[string]any{"command": "cat value"}}}},
		{Tools: []engine.ToolCall{{Name: "editor", Input: map[string]any{"command": "str_replace", "path": "value", "old_str": "1", "new_str": "2"}}}},
		{Text: "Fixed."},
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	eng, err := engine.New(context.Background(), "api", engine.Settings{Provider: "anthropic", Model: "scripted", APIKey: key, BaseURL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	benchBackends(b, func(o *run.Options) { o.Engine = eng })
}

// benchBackends races the fixture on both backends, setup changing the
// race's options (its engine), and reports the rates and ratios.
func benchBackends(b *testing.B, setup func(*run.Options)) {
	cfg, ns := cluster(b)
	repo := fixture(b)
	const forks = 4
	agent := `echo 2 > value`
	var lf, kf, lv, kv float64
	for i := 0; i < b.N; i++ {
		local, err := workspace.Open(filepath.Join(b.TempDir(), "state"))
		if err != nil {
			b.Fatal(err)
		}
		o := benchOptions(b, local, repo, agent, forks)
		setup(&o)
		f, v := measure(b, o)
		lf, lv = lf+f, lv+v
		// as the CLI makes it: a warm pod per fork (FORKBOMB_BENCH_WARM
		// overrides), forkbomb-pod sent into each (FORKBOMB_BENCH_POD_BIN;
		// default: this test binary, which serves as well)
		warm := forks
		if v, err := strconv.Atoi(os.Getenv("FORKBOMB_BENCH_WARM")); err == nil {
			warm = v
		}
		var limits sandbox.Policy
		run.ForkLimits(o).Apply(&limits)
		ks, err := Open(context.Background(), Options{Local: local, Config: cfg, Namespace: ns, PodBin: os.Getenv("FORKBOMB_BENCH_POD_BIN"),
			Warm: warm, WarmMemory: limits.Memory, WarmCPUs: limits.CPUs})
		if err != nil {
			b.Fatal(err)
		}
		o.Store, o.JudgeStore, o.RunsDir = ks, local, filepath.Join(b.TempDir(), "runs")
		f, v = measure(b, o)
		kf, kv = kf+f, kv+v
		ks.Close()
	}
	n := float64(b.N)
	b.ReportMetric(lf/n, "local-forks/s")
	b.ReportMetric(kf/n, "kube-forks/s")
	b.ReportMetric(lv/n, "local-ms-to-verdict")
	b.ReportMetric(kv/n, "kube-ms-to-verdict")
	b.ReportMetric((kv/n)/(lv/n), "verdict-time-ratio")
	b.ReportMetric((lf/n)/(kf/n), "fork-rate-ratio-local/kube")
}

func benchOptions(b *testing.B, s *workspace.Store, repo, agent string, forks int) run.Options {
	o := raceOptions(b, nil, repo, agent, forks)
	o.Store, o.JudgeStore = s, nil
	o.All = true // every fork's agent runs to its end: a rate of forks, not of one winner
	return o
}

// measure races and reads the record: forks per second and milliseconds
// to the first verdict.
func measure(b *testing.B, o run.Options) (float64, float64) {
	r, dir, err := run.Race(context.Background(), o)
	if err != nil {
		b.Fatal(err)
	}
	if r.Winner == nil {
		b.Fatalf("no winner: %+v", r.Fork)
	}
	f, err := os.Open(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var start, verdict, lastExit time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e record.Event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		switch e.Type {
		case "run_start":
			start = e.Time
		case "verdict":
			if verdict.IsZero() {
				verdict = e.Time
			}
		case "fork_exit":
			lastExit = e.Time
		}
	}
	if start.IsZero() || verdict.IsZero() || lastExit.IsZero() {
		b.Fatalf("record %s lacks run_start, verdict or fork_exit", dir)
	}
	return float64(o.Forks) / lastExit.Sub(start).Seconds(), float64(verdict.Sub(start).Milliseconds())
}
