package sandbox

import (
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// A start-up trace: one line per phase of a confined start, for finding
// where its time goes (issue 10) without strace's distortion of every
// syscall. Lines are
//
//	forkbomb-trace PID PHASE NANOSECONDS
//
// on CLOCK_MONOTONIC, which the parent and the init share (no time
// namespace), so both sides line up; the phases are named in
// startInit, runOnce and initMain. Off unless Stdio.Trace is set (the CLI sets
// it to stderr when FORKBOMB_TRACE_START is set); the init then writes its
// own phases to its stderr, the command's.
type tracer struct{ w io.Writer }

func (t tracer) mark(phase string) {
	if t.w == nil {
		return
	}
	t.markAt(phase, monotonic())
}

// markAt writes a phase that ended at ns, read earlier with monotonic:
// the init's first phases end before it knows whether to trace.
func (t tracer) markAt(phase string, ns int64) {
	if t.w == nil {
		return
	}
	line := "forkbomb-trace " + strconv.Itoa(os.Getpid()) + " " + phase + " " +
		strconv.FormatInt(ns, 10) + "\n"
	_, _ = io.WriteString(t.w, line)
}

func monotonic() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Sec*1e9 + ts.Nsec
}
