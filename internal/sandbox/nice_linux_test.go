package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestNice: a command run with Policy.Nice starts that many steps below
// the caller's CPU priority, and cannot raise it again (`nice -n -1` in
// the sandbox leaves it where it was: RLIMIT_NICE is 0 there). Its
// processes compete as a lowered group, read from outside while it runs:
// where a cgroup with the CPU controller can be made here (root on a v1
// hierarchy, a delegated v2 one), the command's cgroup carries the weight
// of that nice (cpu.shares, cpu.weight.nice); elsewhere, where the kernel
// schedules each session as a group (autogroup), its session's group has
// that nice, waited for up to 30 s, as an unprivileged caller's write is
// taken only every so often. The control: the same command without Nice
// has the caller's priority, no such cgroup, and a new session's group at
// nice 0.
func TestNice(t *testing.T) {
	t.Parallel()
	own, weighted, autogroup := niceHere(t)
	t.Logf("the caller's nice %d; a weighted cgroup can be made: %v; autogroup: %v", own, weighted, autogroup)
	forEachMode(t, func(t *testing.T, m sandbox.Mode) {
		for _, c := range []struct {
			name       string
			nice, want int
		}{
			{"lowered", 10, min(own+10, 19)},
			{"control", 0, own},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				marker := fmt.Sprintf("nice-marker-%s-%s-%d", m, c.name, time.Now().UnixNano())
				p := shPolicy(m, t.TempDir(), `awk '{print $19}' /proc/$$/stat; nice -n -1 awk '{print $19}' /proc/self/stat; sleep 120 # `+marker)
				p.Nice = c.nice
				p.Init = testInit(t)
				pid, out, cancel, done := startMarked(t, p, marker, 2)
				shares, weight := testutil.CPUWeight(pid)
				group := -1
				if autogroup {
					for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
						group = testutil.AutogroupNice(pid)
						if group == min(own+c.nice, 19) || c.nice == 0 || weighted || time.Now().After(deadline) {
							break
						}
					}
				}
				cancel()
				<-done
				l := strings.Fields(out.String())
				if len(l) != 2 {
					t.Fatalf("output: %q", out.String())
				}
				if l[0] != strconv.Itoa(c.want) {
					t.Errorf("the command's nice is %s; want %d (the caller's %d, Nice %d)", l[0], c.want, own, c.nice)
				}
				if c.nice > 0 && l[1] != l[0] {
					t.Errorf("nice -n -1 in the sandbox took the command from %s to %s", l[0], l[1])
				}
				switch {
				case c.nice == 0:
					if shares != "" || weight != "" {
						t.Errorf("the control's cgroup has a weight (shares %q, weight.nice %q)", shares, weight)
					}
					if autogroup && group != 0 {
						t.Errorf("the control's session group has nice %d; want 0 (a new session's)", group)
					}
				case weighted:
					if shares != "110" && weight != "10" {
						t.Errorf("the command's cgroup weight: shares %q, weight.nice %q; want 110 (v1) or 10 (v2)", shares, weight)
					}
				case autogroup:
					if group != min(own+c.nice, 19) {
						t.Errorf("the command's session group has nice %d; want %d", group, min(own+c.nice, 19))
					}
				default:
					t.Logf("neither a weighted cgroup nor autogroup here: the processes' own nice is the whole of it")
				}
			})
		}
	})
}

// niceHere is the caller's nice, whether a sandbox with Nice 10 gets a
// cgroup carrying its weight here, and whether the kernel groups sessions
// (autogroup).
func niceHere(t *testing.T) (own int, weighted, autogroup bool) {
	own, err := testutil.ProcNice(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return own, sandbox.CgroupWeighted(10), testutil.Autogroup()
}

// startMarked starts p, whose command's argv holds marker, and waits until
// its process is seen from outside and its output has at least lines
// words: its pid, its output, the cancel that ends it, and the channel
// Run's error comes on.
func startMarked(t *testing.T, p sandbox.Policy, marker string, lines int) (int, *testutil.Buffer, context.CancelFunc, chan error) {
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	out := &testutil.Buffer{}
	done := make(chan error, 1)
	go func() { _, err := sandbox.Run(ctx, p, sandbox.Stdio{Stdout: out}); done <- err }()
	pid := 0
	for deadline := time.Now().Add(time.Minute); pid == 0 || len(strings.Fields(out.String())) < lines; {
		if pids := hostProcsWith(marker); len(pids) > 0 {
			pid = pids[0]
		}
		select {
		case err := <-done:
			t.Fatalf("the command ended: %v; output %q", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command did not get past its %d words in a minute: %q", lines, out.String())
		}
	}
	return pid, out, cancel, done
}

// TestYield: a command run with Policy.Yield and Nice runs at the
// caller's priority while the Yield is not held, its group lowered by
// Nice while it is, and at the caller's again once it is released — read
// from outside, on its cgroup's weight where a weighted cgroup can be made
// here, else on its session's group (autogroup), waited for up to 30 s
// each, as an unprivileged caller's write is taken only every so often.
// Each process's own nice stays the caller's throughout (nothing could
// raise it back). A second command started while the Yield is held starts
// lowered; releasing raises both.
func TestYield(t *testing.T) {
	t.Parallel()
	own, weighted, autogroup := niceHere(t)
	if !weighted && !autogroup {
		testutil.SkipOrFail(t, "neither a weighted cgroup nor autogroup here: a Yield does nothing (SECURITY.md)")
	}
	// group reads pid's lowerable group: its cgroup's weight or its
	// session group's nice, as steps below the caller's.
	group := func(pid int) int {
		n, ok := testutil.GroupSteps(pid)
		if !ok {
			t.Fatalf("pid %d's group (cgroup weight or session group) cannot be read", pid)
		}
		return n
	}
	waitGroup := func(pid, want int, when string) {
		t.Helper()
		got := -1
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if got = group(pid); got == want || time.Now().After(deadline) {
				break
			}
		}
		if got != want {
			t.Errorf("%s: pid %d's group is %d steps below the caller's; want %d", when, pid, got, want)
		}
	}
	var y sandbox.Yield
	start := func(name string) int {
		marker := fmt.Sprintf("yield-marker-%s-%d", name, time.Now().UnixNano())
		p := shPolicy(sandbox.ModeAuto, t.TempDir(), `echo started; sleep 120 # `+marker)
		p.Nice, p.Yield = 10, &y
		p.Init = testInit(t)
		pid, _, _, _ := startMarked(t, p, marker, 1)
		return pid
	}
	first := start("first")
	waitGroup(first, 0, "not held")
	release := y.Hold()
	waitGroup(first, 10, "held")
	second := start("second")
	waitGroup(second, 10, "started while held")
	release()
	release() // harmless
	waitGroup(first, 0, "released")
	waitGroup(second, 0, "released")
	for _, pid := range []int{first, second} {
		if n, err := testutil.ProcNice(pid); err != nil || n != own {
			t.Errorf("pid %d's own nice is %d (%v); want the caller's %d", pid, n, err, own)
		}
	}
	// a Yield needs Nice
	p := shPolicy(sandbox.ModeAuto, t.TempDir(), "true")
	p.Yield = &y
	if _, err := sandbox.Run(t.Context(), p, sandbox.Stdio{}); err == nil || !strings.Contains(err.Error(), "Yield") {
		t.Errorf("Yield without Nice: %v; want a policy error naming Yield", err)
	}
}

// TestNiceRange: Nice outside 0–19 is refused before anything runs.
func TestNiceRange(t *testing.T) {
	t.Parallel()
	for _, n := range []int{-1, 20} {
		p := shPolicy(sandbox.ModeAuto, t.TempDir(), "true")
		p.Nice = n
		if _, err := sandbox.Run(t.Context(), p, sandbox.Stdio{}); err == nil || !strings.Contains(err.Error(), "Nice") {
			t.Errorf("Nice %d: %v; want a policy error naming Nice", n, err)
		}
	}
}
