package kube

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/modelproxy"
	"github.com/forkbomb/forkbomb/internal/record"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// BenchmarkBackends races the same task — 4 forks of the fixture, each
// agent fixing it at once, judged here — on the local backend and on the
// test cluster, and reports for each forks per second (forks / time until
// the last fork's agent ended) and the time from the run's start to its
// first verdict, and the ratios kubernetes/local. FORKBOMB_BENCH_REGISTRY=1
// runs the pods of a tree image (Options.Registry; a registry on
// loopback): the first race of the fixture's commit pushes it.
// FORKBOMB_BENCH_KEEP=1 keeps warm pods between runs (Options.KeepWarm):
// an untimed race first leaves the pool, and each timed race claims the
// pods the one before it left, once they run (a user's next run, unless
// it comes within seconds of the last).
// FORKBOMB_BENCH_SESSIONS=0 gives each command, diff and edit in a pod an
// exec of its own, as before sessions; kube-execs/fork counts them.
//
//	go test -run '^$' -bench Backends -benchtime 3x ./internal/kube
func BenchmarkBackends(b *testing.B) {
	benchBackends(b, func(*run.Options, bool) {}, "")
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
	benchBackends(b, func(o *run.Options, _ bool) { o.Engine = eng }, "")
}

// BenchmarkBackendsClaudeCode is BenchmarkBackends with the real Claude
// Code CLI: this machine's in the local forks, the agents image's in the
// pods, each fork's scripted model fixing the value with one Bash call.
//
//	go test -run '^$' -bench BackendsClaudeCode -benchtime 3x ./internal/kube
func BenchmarkBackendsClaudeCode(b *testing.B) {
	img := os.Getenv("FORKBOMB_K8S_AGENTS_IMAGE")
	if img == "" {
		b.Skip("no agents image (FORKBOMB_K8S_AGENTS_IMAGE, from scripts/k8s-cluster env)")
	}
	cfg, ns := cluster(b)
	key := "sk-ant-bench-" + strings.Repeat("b", 24)
	srv, err := engine.StartScripted(key, map[string][]engine.Step{"": {
		{Tools: []engine.ToolCall{{Name: "Bash", Input: map[string]any{"command": "echo 2 > value"}}}},
		{Text: "Fixed."},
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	p, err := modelproxy.Start(modelproxy.Options{Upstreams: []modelproxy.Upstream{{Kind: modelproxy.Anthropic, BaseURL: srv.URL, APIKey: key}}})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	local, err := engine.New(context.Background(), "claude-code", engine.Settings{Proxy: p})
	if err != nil {
		b.Fatal(err)
	}
	find := func(ctx context.Context, name, given string) (string, string, error) {
		bin, version, _, err := FindAgent(ctx, ProbeOptions{Config: cfg, Namespace: ns, Image: img}, name, given)
		return bin, version, err
	}
	inPods, err := engine.New(context.Background(), "claude-code", engine.Settings{Proxy: p, Find: find})
	if err != nil {
		b.Fatal(err)
	}
	benchBackends(b, func(o *run.Options, kube bool) {
		o.Engine = local
		if kube {
			o.Engine = inPods
		}
	}, img)
}

// benchBackends races the fixture on both backends, setup changing the
// race's options (its engine) on each, the pods of image (""; the
// default), and reports the rates and ratios.
func benchBackends(b *testing.B, setup func(o *run.Options, kube bool), image string) {
	cfg, ns := cluster(b)
	repo := fixture(b)
	const forks = 4
	agent := `echo 2 > value`
	var lf, kf, lv, kv, execs float64
	for i := 0; i < b.N; i++ {
		local, err := workspace.Open(filepath.Join(b.TempDir(), "state"))
		if err != nil {
			b.Fatal(err)
		}
		o := benchOptions(b, local, repo, agent, forks)
		setup(&o, false)
		f, v := measure(b, o)
		lf, lv = lf+f, lv+v
		// as the CLI makes it: a warm pod per fork (FORKBOMB_BENCH_WARM
		// overrides), forkbomb-pod sent into each (FORKBOMB_BENCH_POD_BIN;
		// default: this test binary, which serves as well)
		warm := forks
		if v, err := strconv.Atoi(os.Getenv("FORKBOMB_BENCH_WARM")); err == nil {
			warm = v
		}
		// as the CLI sizes a fork's pod (internal/cli/full/kube.go)
		if mem, lowered := DefaultMemory(context.Background(), cfg, run.ForksAtOnce(o), run.ForkLimits(o).Memory); lowered {
			o.Limits.Memory = mem
		}
		var limits sandbox.Policy
		run.ForkLimits(o).Apply(&limits)
		ko := Options{Local: local, Config: cfg, Namespace: ns, PodBin: os.Getenv("FORKBOMB_BENCH_POD_BIN"), UseSandboxCRD: "never",
			Warm: warm, WarmMemory: limits.Memory, WarmCPUs: limits.CPUs, Image: image}
		// FORKBOMB_BENCH_BIN_STREAM=1: forkbomb-pod sent to each pod on
		// its start, as before the pods had it from ConfigMaps (binmap.go)
		ko.streamBin = os.Getenv("FORKBOMB_BENCH_BIN_STREAM") == "1"
		// FORKBOMB_BENCH_SANDBOXES=1: each fork and warm pod an
		// agent-sandbox Sandbox, its pod made by the cluster's
		// agent-sandbox controller (no kept pods then)
		if os.Getenv("FORKBOMB_BENCH_SANDBOXES") == "1" {
			ko.UseSandboxCRD = "always"
		}
		if os.Getenv("FORKBOMB_BENCH_REGISTRY") == "1" { // a tree image, in a registry on loopback
			if image != "" {
				b.Fatal("FORKBOMB_BENCH_REGISTRY serves the default image only")
			}
			ko.Registry, ko.Image = testRegistry(b)
		}
		// FORKBOMB_BENCH_KEEP=1: pods kept between runs (Options.KeepWarm);
		// one untimed race first leaves the pool the timed ones claim
		keep := os.Getenv("FORKBOMB_BENCH_KEEP") == "1"
		if keep {
			ko.KeepWarm = 10 * time.Minute
		}
		open := func() *Store {
			ks, err := Open(context.Background(), ko)
			if err != nil {
				b.Fatal(err)
			}
			// FORKBOMB_BENCH_SESSIONS=0: an exec per command, as before
			// sessions (session.go)
			ks.noSessions = os.Getenv("FORKBOMB_BENCH_SESSIONS") == "0"
			return ks
		}
		setup(&o, true)
		o.JudgeStore, o.RunsDir = local, filepath.Join(b.TempDir(), "runs")
		if keep && i == 0 {
			// an untimed run leaves the first pool, and ends (its pods,
			// the winner's too, deleted)
			ks0 := open()
			o.Store = ks0
			measure(b, o)
			must(b, ks0.Keep(context.Background()))
			ks0.Close()
		}
		ks := open()
		o.Store = ks
		if keep {
			// a later run finds the pool running, as a user's next run
			// does (unless it comes within seconds of the last): untimed
			must(b, ks.waitPool(context.Background()))
		}
		e0 := ks.execs.Load()
		f, v = measure(b, o)
		execs += float64(ks.execs.Load()-e0) / forks
		if keep {
			must(b, ks.Keep(context.Background()))
			// the pool the next race claims runs before the next local
			// race, untimed: its pods' starts share the cores with no
			// timed race (the next run on a user's machine, unless it
			// comes within seconds)
			must(b, ks.waitPool(context.Background()))
		}
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
	b.ReportMetric(execs/n, "kube-execs/fork")
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
	// the race's timeline, fork by fork (FORKBOMB_BENCH_TIMELINE=1)
	phases := []string{"fork_start", "fork_exit", "judge_start", "verdict"}
	at := map[int]map[string]time.Time{}
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
		if e.Fork != nil {
			if at[*e.Fork] == nil {
				at[*e.Fork] = map[string]time.Time{}
			}
			if _, seen := at[*e.Fork][string(e.Type)]; !seen {
				at[*e.Fork][string(e.Type)] = e.Time
			}
		}
	}
	if start.IsZero() || verdict.IsZero() || lastExit.IsZero() {
		b.Fatalf("record %s lacks run_start, verdict or fork_exit", dir)
	}
	if os.Getenv("FORKBOMB_BENCH_TIMELINE") == "1" {
		var tl strings.Builder
		fmt.Fprintf(&tl, "%T race timeline (ms from run_start):\n%5s", o.Store, "fork")
		for _, p := range phases {
			fmt.Fprintf(&tl, " %12s", p)
		}
		for n := 0; n < o.Forks; n++ {
			fmt.Fprintf(&tl, "\n%5d", n)
			for _, p := range phases {
				if t, ok := at[n][p]; ok {
					fmt.Fprintf(&tl, " %12d", t.Sub(start).Milliseconds())
				} else {
					fmt.Fprintf(&tl, " %12s", "-")
				}
			}
		}
		fmt.Fprintln(os.Stderr, tl.String())
	}
	return float64(o.Forks) / lastExit.Sub(start).Seconds(), float64(verdict.Sub(start).Milliseconds())
}

// BenchmarkForkStart measures a kubernetes fork's start — from the fork
// to the end of its first command (`true`): its pod made and running, the
// tree and forkbomb's binary sent (or, with a registry, pulled as the
// run's tree image), the probe, the command — on a tiny repository and on
// Go's src tree (copied into a git repository, one commit): without and
// with a warm pod, and with a tree image (a registry on loopback: "reg"
// is a later run of the commit, whose image the node holds; "regnew" the
// first, which pushes it — "push-ms", the run's New — and pulls it). It
// reports the milliseconds and how they grow with the repository
// (gosrc/tiny: 1 would be a start that does not depend on its size).
//
//	go test -run '^$' -bench ForkStart -benchtime 3x ./internal/kube
func BenchmarkForkStart(b *testing.B) {
	cfg, ns := cluster(b)
	reg, image := testRegistry(b)
	gosrc := filepath.Join(b.TempDir(), "gosrc")
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", filepath.Join(strings.TrimSpace(string(goroot)), "src"), gosrc).CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	exec.Command("chmod", "-R", "u+w", gosrc).Run()
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "Go src"}} {
		if out, err := exec.Command("git", append([]string{"-C", gosrc}, args...)...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	repos := map[string]string{"tiny": fixture(b), "gosrc": gosrc}
	// commits of this call's own: a fixture made in the same second as
	// an earlier call's is the same commit, whose image is already pushed
	for _, repo := range repos {
		must(b, os.WriteFile(filepath.Join(repo, "nonce"), []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), 0o644))
		testutil.Git(b, repo, "add", "nonce")
		testutil.Git(b, repo, "commit", "-qm", "nonce")
	}
	ms := map[string]float64{}
	type mode struct {
		key      string
		warm     int
		registry bool
	}
	for i := 0; i < b.N; i++ {
		modes := []mode{{"warm0", 0, false}, {"warm1", 1, false}, {"reg", 0, true}}
		if i == 0 { // the commits' images are pushed once, then held
			modes = []mode{{"warm0", 0, false}, {"warm1", 1, false}, {"regnew", 0, true}, {"reg", 0, true}}
		}
		for _, m := range modes {
			for _, name := range []string{"tiny", "gosrc"} {
				local, err := workspace.Open(filepath.Join(b.TempDir(), "state"))
				if err != nil {
					b.Fatal(err)
				}
				o := Options{Local: local, Config: cfg, Namespace: ns, PodBin: os.Getenv("FORKBOMB_BENCH_POD_BIN"), Warm: m.warm, UseSandboxCRD: "never"}
				if m.registry {
					o.Image, o.Registry = image, reg
				}
				ks, err := Open(context.Background(), o)
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				top, base, err := workspace.ResolveBase(ctx, repos[name], "HEAD")
				if err != nil {
					b.Fatal(err)
				}
				run := fmt.Sprintf("fs%d%s%s", i, name, m.key)
				t0 := time.Now()
				if _, err := ks.New(ctx, run, workspace.NewOptions{Repo: top, Rev: base}); err != nil {
					b.Fatal(err)
				}
				if m.key == "regnew" {
					ms[name+"-push"] += float64(time.Since(t0).Milliseconds()) * float64(b.N) // once
				}
				if m.registry { // what the row says it measures
					ks.mu.Lock()
					pushed := ks.runs[run].image.Pushed
					ks.mu.Unlock()
					if pushed != (m.key == "regnew") {
						b.Fatalf("%s %s: the tree image pushed %v", name, m.key, pushed)
					}
				}
				t0 = time.Now()
				if _, err := ks.Fork(ctx, run, run+"-f0"); err != nil {
					b.Fatal(err)
				}
				res, err := ks.Exec(ctx, run+"-f0", sandbox.Policy{Command: []string{"true"}, Timeout: time.Minute}, sandbox.Stdio{})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("%s: %v %+v", name, err, res)
				}
				k := name + "-" + m.key
				if m.key == "regnew" {
					ms[k] += float64(time.Since(t0).Milliseconds()) * float64(b.N) // once
				} else {
					ms[k] += float64(time.Since(t0).Milliseconds())
				}
				ks.Close()
			}
		}
	}
	for _, k := range []string{"warm0", "warm1", "regnew", "reg"} {
		b.ReportMetric(ms["gosrc-"+k]/ms["tiny-"+k], "gosrc/tiny-"+k)
	}
	n := float64(b.N)
	for k, v := range ms {
		b.ReportMetric(v/n, k+"-ms")
	}
}

// waitPool waits until every kept pod of the namespace not yet claimed
// is running.
func (s *Store) waitPool(ctx context.Context) error {
	if s.crd { // agent-sandbox's pools: each as ready as it is large
		ctx, cancel := context.WithTimeout(ctx, podReadyTimeout)
		defer cancel()
		for {
			list, err := s.dyn.Resource(sandboxPoolGVR).Namespace(s.o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelSandboxPool})
			if err != nil {
				return err
			}
			ready := true
			for _, u := range list.Items {
				want, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
				have, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
				ready = ready && have >= want
			}
			if ready {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	list, err := s.dyn.Resource(podGVR).Namespace(s.o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelPool})
	if err != nil {
		return err
	}
	for _, u := range list.Items {
		if _, err := s.waitRunning(ctx, u.GetName(), ""); err != nil {
			return err
		}
	}
	return nil
}
