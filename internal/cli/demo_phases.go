package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/record"
)

// demoTest is the demo's test command. Vet is off because the demo's
// module is forkbomb's own constant and vet would find nothing in it, while
// it costs every judged run a vet pass (≈ 1.5 s of CPU even with a warm
// cache). A user's race runs the test command the user gave.
const demoTest = "go test -vet=off ./..."

// demoCommitDate makes the demo's commit the same on every run, so the
// judge's baseline, cached by base commit and command, is run only once.
const demoCommitDate = "2025-01-01T00:00:00Z"

// warmGoCache builds the demo module's test binary on the host, before the
// race, so the standard library packages its tests need are in the user's
// Go build cache. The judge reads that cache through a throwaway layer
// (nothing a fork compiles is kept), so without this every judged run of a
// cold cache — the baseline and each fork — compiles them again: most of a
// first demo's time. It is safe to run unconfined only because the module
// is forkbomb's own constant source, standard library only, written by
// forkbomb a moment ago; a user's repository is never built outside a
// sandbox. The environment is the one the judge's sandbox gives `go`
// (its allowlist, no user go.env, the judge's GO* settings), so what is
// built here is what the judge looks up; it only builds (-c), so no test
// result is cached for the judge to find.
func warmGoCache(ctx context.Context, repo string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("find go: %w", err)
	}
	out, err := exec.CommandContext(ctx, goBin, "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		return fmt.Errorf("go env: %w", err)
	}
	caches := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(caches) != 2 || caches[0] == "" || caches[0] == "off" {
		return nil // no build cache to warm: the judge has none either
	}
	tmp, err := os.MkdirTemp("", "forkbomb-demo-warm-")
	if err != nil {
		return fmt.Errorf("warm go cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, goBin, "test", "-vet=off", "-c", "-o", filepath.Join(tmp, "wallet.test"), ".")
	cmd.Dir = repo
	cmd.Env = []string{"HOME=" + tmp, "TMPDIR=" + tmp, "GOENV=off", "GOCACHE=" + caches[0], "GOMODCACHE=" + caches[1],
		"GOPROXY=off", "GOTOOLCHAIN=local", "GOTELEMETRY=off"}
	for _, name := range []string{"PATH", "USER", "LANG", "SHELL", "TERM"} {
		if v, ok := os.LookupEnv(name); ok {
			cmd.Env = append(cmd.Env, name+"="+v)
		}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("warm go cache: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// demoClock collects the demo's phases, so a newcomer sees where its time
// goes: its own steps as they end, the race's from its record.
type demoClock struct {
	start  time.Time
	steps  []demoStep
	judged atomic.Int64 // ns to ready the judge (its pid 1, the baseline); set by the race's goroutine
}

type demoStep struct {
	name, note string
	took       time.Duration
}

// step records a phase that began at from.
func (c *demoClock) step(name string, from time.Time, note string) {
	c.steps = append(c.steps, demoStep{name: name, took: time.Since(from), note: note})
}

// report prints the phases: the demo's own, then the race's from the
// record at dir (events.jsonl timestamps, each fork's verdict.json).
func (c *demoClock) report(w io.Writer, dir string, personas []string) {
	fmt.Fprintf(w, "\n== where the time went (wall; the judge readies while the agents work, and forks are judged in parallel) ==\n")
	for _, s := range c.steps {
		fmt.Fprintf(w, "%-26s %6.1fs  %s\n", s.name, s.took.Seconds(), s.note)
	}
	ev := readDemoEvents(dir)
	if first, ok := ev.first("fork_start"); ok {
		if rs, ok := ev.first("run_start"); ok {
			fmt.Fprintf(w, "%-26s %6.1fs  %s\n", "pid 1 and forks", first.Sub(rs).Seconds(), "snapshot of the base, then an O(1) fork each")
		}
	}
	if judged := time.Duration(c.judged.Load()); judged > 0 {
		note := "its pid 1 and the baseline (the tests on the untouched base), while the agents work"
		if b := demoBaseline(dir, len(personas)); b != nil {
			if b.Cached {
				note += "; baseline cached"
			} else {
				note += fmt.Sprintf("; baseline test run %.1fs", float64(b.Ms)/1000)
			}
		}
		fmt.Fprintf(w, "%-26s %6.1fs  %s\n", "judge ready", judged.Seconds(), note)
	}
	for n, p := range personas {
		// A fork the record has no agent span for (killed before it ran,
		// or the record was cut short) gets no line: nothing is made up.
		agent, ok := ev.span(n, "fork_start", "fork_exit")
		if !ok {
			continue
		}
		fmt.Fprintf(w, "%-26s %6.1fs  agent", fmt.Sprintf("fork %d (%s)", n, p), agent.Seconds())
		if judged, ok := ev.span(n, "judge_start", "verdict"); ok {
			fmt.Fprintf(w, "; judge %.1fs", judged.Seconds())
			if t := demoTimings(dir, n); t != nil {
				fmt.Fprintf(w, " (queue %.1fs, fork %.1fs, apply and test run %.1fs)", ms(t.Queue), ms(t.Fork), ms(t.Test))
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%-26s %6.1fs\n", "total", time.Since(c.start).Seconds())
}

func ms(v int64) float64 { return float64(v) / 1000 }

// demoEvents are the race's events, by kind and fork.
type demoEvents map[string]time.Time

func readDemoEvents(dir string) demoEvents {
	out := demoEvents{}
	f, err := os.Open(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		var e record.Event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		k := string(e.Type)
		if e.Fork != nil {
			k = fmt.Sprintf("%s/%d", e.Type, *e.Fork)
		}
		if t, seen := out[k]; !seen || e.Time.Before(t) {
			out[k] = e.Time
		}
		if e.Fork != nil {
			if t, seen := out[string(e.Type)]; !seen || e.Time.Before(t) {
				out[string(e.Type)] = e.Time
			}
		}
	}
	return out
}

func (e demoEvents) first(kind string) (time.Time, bool) {
	t, ok := e[kind]
	return t, ok
}

// span is the time from fork n's first from event to its first to event.
func (e demoEvents) span(n int, from, to string) (time.Duration, bool) {
	a, ok1 := e[fmt.Sprintf("%s/%d", from, n)]
	b, ok2 := e[fmt.Sprintf("%s/%d", to, n)]
	if !ok1 || !ok2 {
		return 0, false
	}
	return b.Sub(a), true
}

func demoVerdict(dir string, n int) *judge.Verdict {
	data, err := os.ReadFile(filepath.Join(dir, "forks", fmt.Sprint(n), "verdict.json"))
	if err != nil {
		return nil
	}
	var v judge.Verdict
	if json.Unmarshal(data, &v) != nil {
		return nil
	}
	return &v
}

func demoTimings(dir string, n int) *judge.Timings {
	if v := demoVerdict(dir, n); v != nil {
		return &v.Timings
	}
	return nil
}

// demoBaseline is the baseline as any judged fork's verdict reports it.
func demoBaseline(dir string, forks int) *judge.Baseline {
	for n := range forks {
		if v := demoVerdict(dir, n); v != nil && v.Baseline != nil {
			return v.Baseline
		}
	}
	return nil
}
