package sandbox_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// TestResultCPU: a run's CPU time counts what the command started and
// waited for. A child shell burns CPU in a loop and prints its own CPU
// time as the kernel counts it (/proc/self/stat's utime and stime, in
// clock ticks) before it ends; the run's CPU is at least that. The
// control: the child's own count is not zero. Confined in each mode, and
// unconfined.
func TestResultCPU(t *testing.T) {
	t.Parallel()
	// The inner shell's $$ is its own pid; cat reads its stat while it waits.
	const script = `sh -c 'i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; cat /proc/$$/stat'`
	check := func(t *testing.T, o outcome) {
		t.Helper()
		if o.err != nil || o.code() != 0 {
			t.Fatalf("run: %v (code %d)", o.err, o.code())
		}
		f := strings.Fields(o.out[strings.LastIndex(o.out, ")")+1:]) // after the command's name
		if len(f) < 13 {
			t.Fatalf("stat: %q", o.out)
		}
		ut, _ := strconv.Atoi(f[11]) // utime: field 14 of the line, 12th after the name
		st, _ := strconv.Atoi(f[12])
		child := time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100 on Linux
		if child == 0 {
			t.Fatalf("control: the child's loop took no CPU the kernel counts: %q", o.out)
		}
		if o.res.CPU < child {
			t.Errorf("the run's CPU %v is under its child's own count %v: what the command waited for is not counted", o.res.CPU, child)
		}
	}
	forEachMode(t, func(t *testing.T, m sandbox.Mode) { check(t, runPolicy(t, shPolicy(m, t.TempDir(), script))) })
	t.Run("unconfined", func(t *testing.T) {
		p := shPolicy("", t.TempDir(), script)
		p.NoSandbox = true
		check(t, runPolicy(t, p))
	})
}
