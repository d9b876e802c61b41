package run_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/record"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// bombs: fork 0 runs a fork bomb that keeps retrying (bash), fork 1 a
// memory bomb, fork 2 fixes the bug honestly.
const bombs = `case $FORKBOMB_FORK in
0) exec bash -c ':(){ sleep 302.777 & : | : & }; :; sleep 80' ;;
1) tail /dev/zero ;;
2) sed -i 's/\$1 - \$2/$1 + $2/' lib.sh ;;
esac`

// TestRaceBombs: with small limits, a fork bomb and a memory bomb each end
// only their own fork's agent, with state "failed" and a reason naming the
// limit in run.json and events.jsonl, while the honest fork goes on and
// wins; nothing of the bombs outlives the race. What the reason can say
// rests on what the probe reports: with a cgroup the kernel names both
// limits; without one (an unprivileged user on a v1/v2 hybrid) the process
// count is watched in the fork's pid namespace, and the memory bomb meets
// RLIMIT_DATA, per process — its allocation fails and its agent crashes,
// unnamed. The positive control is the honest fork: the same limits let an
// agent that stays under them finish and win.
func TestRaceBombs(t *testing.T) {
	t.Parallel()
	rep, err := sandbox.Probe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cg := rep.Layer("cgroup")
	cgroup := cg != nil && cg.Status == "ok"
	o := options(t, repo(t))
	o.Forks, o.All = 3, true // every fork ends by itself: no bomb is cut short by a winner
	o.Engine = engine.Command{Argv: []string{"/bin/sh", "-c", bombs}}
	o.Limits = sandbox.Limits{Memory: 128 << 20, Pids: 40}
	r, dir, err := run.Race(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range r.Fork {
		t.Logf("fork %d: %s exit %d — %s %s", f.N, f.State, f.Exit, f.Verdict, f.Reason)
	}
	if r.Status != event.RunWon || r.Winner == nil || *r.Winner != 2 {
		t.Fatalf("status %s winner %v, want won by the honest fork 2", r.Status, r.Winner)
	}
	// Without a cgroup, RLIMIT_NPROC counts the init's threads too: the bomb
	// can starve the init before the watch names it, and the init's death
	// takes the whole pid namespace with it — contained, but read as a
	// crash (documented in SECURITY.md as partial).
	if f := r.Fork[0]; !(f.State == event.ForkFailed && strings.HasPrefix(f.Reason, "process limit (40) reached")) && (cgroup || f.State != event.ForkCrashed) {
		t.Errorf("fork bomb: state %q reason %q, want failed: process limit (40) reached", f.State, f.Reason)
	}
	if f := r.Fork[1]; cgroup && (f.State != event.ForkFailed || !strings.HasPrefix(f.Reason, "memory limit (128 MiB) reached")) {
		t.Errorf("memory bomb with a cgroup: state %q reason %q, want failed: memory limit (128 MiB) reached", f.State, f.Reason)
	} else if !cgroup && (f.State != event.ForkCrashed || f.Exit == 0) {
		t.Errorf("memory bomb under RLIMIT_DATA: state %q exit %d, want crashed", f.State, f.Exit)
	}
	if f := r.Fork[2]; f.State != event.ForkExited || f.Verdict != event.Pass {
		t.Errorf("honest fork: %+v", f)
	}
	// the record on disk says the same, and events.jsonl names the limit
	saved, err := record.Load(o.RunsDir, r.ID)
	if err != nil || saved.Fork[0].State != r.Fork[0].State {
		t.Errorf("run.json: %v %+v", err, saved)
	}
	reasons := map[int]string{}
	var limits event.LimitsData
	data, _ := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var ev record.Event
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		if ev.Type == event.ForkExit && ev.Fork != nil {
			var d event.ForkExitData
			ev.Decode(&d)
			reasons[*ev.Fork] = d.Reason
		}
		if ev.Type == event.RunStart {
			var d event.RunStartData
			ev.Decode(&d)
			limits = d.Limits
		}
	}
	wantBomb := ""
	if r.Fork[0].State == event.ForkFailed {
		wantBomb = "process limit (40) reached"
	}
	if reasons[0] != wantBomb || (cgroup && reasons[1] != "memory limit (128 MiB) reached") || reasons[2] != "" {
		t.Errorf("fork_exit reasons: %v", reasons)
	}
	if limits.Memory != 128<<20 || limits.Pids != 40 {
		t.Errorf("run_start limits: %+v", limits)
	}
	// the machine is unharmed: nothing of the bomb is left
	if s := testutil.ProcsLeft("302.777"); len(s) > 0 {
		t.Errorf("LEAK: %d fork-bomb processes outlived the race", len(s))
	}
}

// TestDefaultLimits: a race and a judge bound their commands by default —
// a share of the machine's memory per fork at work, within 512 MiB–8 GiB,
// and sandbox.DefaultPids — and Unlimited lifts a limit.
func TestDefaultLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		given  sandbox.Limits
		forks  int
		memory func(int64) bool
		pids   int
	}{
		{"one fork", sandbox.Limits{}, 1, func(m int64) bool { return m >= sandbox.MinDefaultMemory && m <= sandbox.MaxDefaultMemory }, sandbox.DefaultPids},
		{"many forks", sandbox.Limits{}, 64, func(m int64) bool { return m >= sandbox.MinDefaultMemory && m <= sandbox.MaxDefaultMemory }, sandbox.DefaultPids},
		{"given", sandbox.Limits{Memory: 300 << 20, Pids: 77}, 4, func(m int64) bool { return m == 300<<20 }, 77},
		{"none", sandbox.Limits{Memory: sandbox.Unlimited, Pids: sandbox.Unlimited, CPUs: sandbox.Unlimited}, 4, func(m int64) bool { return m == 0 }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.given.Resolve(sandbox.DefaultLimits(tc.forks))
			if l.Resolve(sandbox.DefaultLimits(1)) != l {
				t.Errorf("resolving twice changed %+v", l)
			}
			var p sandbox.Policy
			l.Apply(&p)
			if !tc.memory(p.Memory) || p.Pids != tc.pids || p.CPUs != 0 {
				t.Errorf("policy limits %d/%d/%v from %+v", p.Memory, p.Pids, p.CPUs, l)
			}
		})
	}
	if one, many := sandbox.DefaultLimits(1), sandbox.DefaultLimits(64); many.Memory > one.Memory {
		t.Errorf("64 forks get more memory each (%d) than one (%d)", many.Memory, one.Memory)
	}
}
