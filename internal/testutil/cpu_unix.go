//go:build unix

package testutil

import (
	"syscall"
	"time"
)

// CPUTime is the user and system time of this process and of every
// process it (and they, transitively) waited for — the sandboxes a test
// ran and what they ran, not daemons left running. Benchmarks report it
// beside wall time, which a shared machine makes noisy.
func CPUTime() time.Duration {
	var d time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var r syscall.Rusage
		if syscall.Getrusage(who, &r) == nil {
			d += time.Duration(r.Utime.Nano() + r.Stime.Nano())
		}
	}
	return d
}
