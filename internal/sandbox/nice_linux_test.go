package sandbox_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
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
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	own := 20 - raw
	weighted := sandbox.CgroupWeighted(10)
	autogroup := false
	if on, _ := os.ReadFile("/proc/sys/kernel/sched_autogroup_enabled"); strings.TrimSpace(string(on)) == "1" {
		_, err := os.Stat("/proc/self/autogroup")
		autogroup = err == nil
	}
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
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				var out lockedBuffer
				done := make(chan error, 1)
				go func() { _, err := sandbox.Run(ctx, p, sandbox.Stdio{Stdout: &out}); done <- err }()
				var pid int
				// running, and past its two lines
				for deadline := time.Now().Add(time.Minute); pid == 0 || len(strings.Fields(out.String())) < 2; {
					if pids := hostProcsWith(marker); len(pids) > 0 {
						pid = pids[0]
					}
					select {
					case err := <-done:
						t.Fatalf("the command ended: %v; output %q", err, out.String())
					case <-time.After(20 * time.Millisecond):
					}
					if time.Now().After(deadline) {
						t.Fatalf("the command did not get past its two lines in a minute: %q", out.String())
					}
				}
				shares, weight := cpuWeight(t, pid)
				group := -1
				if autogroup {
					for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
						group = autogroupNice(pid)
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

// lockedBuffer is a bytes.Buffer read while the sandbox writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// cpuWeight reads pid's CPU cgroup's weight from the host's cgroupfs when
// it is one of forkbomb's (forkbomb-*): cpu.shares (v1) or
// cpu.weight.nice (v2); "" where there is none.
func cpuWeight(t *testing.T, pid int) (shares, weight string) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !strings.HasPrefix(filepath.Base(f[2]), "forkbomb-") {
			continue
		}
		read := func(path string) string {
			b, err := os.ReadFile(path)
			if err != nil {
				return ""
			}
			return strings.TrimSpace(string(b))
		}
		switch {
		case f[1] == "":
			weight = read(filepath.Join("/sys/fs/cgroup", f[2], "cpu.weight.nice"))
			if weight == "" {
				weight = read(filepath.Join("/sys/fs/cgroup/unified", f[2], "cpu.weight.nice"))
			}
		case hasController(f[1], "cpu"):
			for _, dir := range []string{"cpu,cpuacct", "cpu", "cpuacct,cpu"} {
				if s := read(filepath.Join("/sys/fs/cgroup", dir, f[2], "cpu.shares")); s != "" {
					shares = s
				}
			}
		}
	}
	return shares, weight
}

func hasController(list, c string) bool {
	for _, x := range strings.Split(list, ",") {
		if x == c {
			return true
		}
	}
	return false
}

// autogroupNice is pid's session group's nice (/proc/PID/autogroup:
// "/autogroup-N nice K"), or -1.
func autogroupNice(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/autogroup")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(data))
	if len(f) != 3 {
		return -1
	}
	n, err := strconv.Atoi(f[2])
	if err != nil {
		return -1
	}
	return n
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
