package sandbox_test

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// TestNice: a command run with Policy.Nice starts that many steps below
// the caller's CPU priority, and cannot raise it again (renice to the
// caller's value is refused). Where the kernel schedules each session as
// a group (autogroup on), the sandbox's group is lowered too: the command
// waits up to 5 s for it, as an unprivileged caller's write is taken
// only every so often. The control: the same command without Nice has
// the caller's priority, and its group the caller's group's.
func TestNice(t *testing.T) {
	t.Parallel()
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	own := 20 - raw
	ownGroup := -1
	if on, _ := os.ReadFile("/proc/sys/kernel/sched_autogroup_enabled"); strings.TrimSpace(string(on)) == "1" {
		if f := strings.Fields(readFile(t, "/proc/self/autogroup")); len(f) == 3 {
			ownGroup, _ = strconv.Atoi(f[2])
		}
	}
	// The shell's nice (field 19 of its stat), then its group's once that
	// is WANT (or the last seen), then whether renice to the caller's
	// value worked.
	script := func(wantGroup int) string {
		return `awk '{print $19}' /proc/$$/stat
g=none
if [ -r /proc/self/autogroup ]; then
	i=0
	while [ $i -lt 100 ]; do
		g=$(awk '{print $3}' /proc/self/autogroup)
		[ "$g" = ` + strconv.Itoa(wantGroup) + ` ] && break
		i=$((i+1)); sleep 0.05
	done
fi
echo "$g"
if renice -n ` + strconv.Itoa(own) + ` -p $$ >/dev/null 2>&1; then echo reniced; else echo refused; fi
awk '{print $19}' /proc/$$/stat`
	}
	forEachMode(t, func(t *testing.T, m sandbox.Mode) {
		for _, c := range []struct {
			name       string
			nice, want int
			renice     string
		}{
			{"lowered", 10, min(own+10, 19), "refused"},
			{"control", 0, own, "reniced"},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				wantGroup := ownGroup
				if ownGroup >= 0 && c.nice > 0 {
					wantGroup = min(ownGroup+c.nice, 19)
				}
				p := shPolicy(m, t.TempDir(), script(wantGroup))
				p.Nice = c.nice
				o := runPolicy(t, p)
				if o.err != nil || o.code() != 0 {
					t.Fatalf("run: %v (code %d)", o.err, o.code())
				}
				l := strings.Fields(o.out)
				if len(l) != 4 {
					t.Fatalf("output: %q", o.out)
				}
				if l[0] != strconv.Itoa(c.want) {
					t.Errorf("the command's nice is %s; want %d (the caller's %d, Nice %d)", l[0], c.want, own, c.nice)
				}
				if ownGroup >= 0 && l[1] != strconv.Itoa(wantGroup) {
					t.Errorf("the command's autogroup has nice %s; want %d (the caller's group's %d, Nice %d)", l[1], wantGroup, ownGroup, c.nice)
				}
				if l[2] != c.renice {
					t.Errorf("renice to the caller's nice %d: %s; want %s", own, l[2], c.renice)
				}
				if c.renice == "refused" && l[3] != l[0] {
					t.Errorf("after the refused renice the nice is %s, not %s", l[3], l[0])
				}
			})
		}
	})
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
