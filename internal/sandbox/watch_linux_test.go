package sandbox_test

import (
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestPidsLimitReported: a shell fork bomb held at --pids is ended at once
// (not at its timeout) and reported as Limit "pids", exit 137, with nothing
// of it left; a command that stays under the limit is not (the positive
// control: the watch does not fire on any use of processes). Where the probe
// reports a cgroup the kernel's count of refused forks decides; without one,
// in a pid namespace, the count of the namespace's tasks; the landlock
// backend without a cgroup has no per-sandbox bound to watch.
func TestPidsLimitReported(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, mode sandbox.Mode) {
		if mode == sandbox.ModeLandlock && !cgroupAvailable(t) {
			testutil.SkipNotApplicable(t, "without a cgroup or a user namespace, RLIMIT_NPROC counts every process of the user; documented in SECURITY.md")
		}
		for name, bomb := range map[string]struct {
			script  string
			sampled bool // seen only by sampling without a cgroup
		}{
			// dash gives up at the first refused fork: only the kernel's
			// count (a cgroup) can tell afterwards
			"gives up": {"while :; do sleep M & done", true},
			// bash retries a refused fork, so the bomb stays at the limit
			"persists": {"exec bash -c ':(){ sleep M & : | : & }; :; sleep 80'", false},
		} {
			t.Run(name, func(t *testing.T) {
				m := sleepMarker()
				p := shPolicy(mode, t.TempDir(), strings.ReplaceAll(bomb.script, "M", m))
				p.Pids, p.Timeout = 48, 90*time.Second
				o := runPolicy(t, p)
				if o.err != nil {
					t.Fatal(o.err)
				}
				if s := survivors(m); len(s) > 0 {
					killAll(s)
					t.Errorf("LEAK: %d fork-bomb processes survived", len(s))
				}
				if bomb.sampled && !cgroupAvailable(t) {
					// the probe reports no cgroup: the bomb, refused by
					// RLIMIT_NPROC, ends by itself with its own status,
					// which nothing names (documented in SECURITY.md)
					if o.res.TimedOut || o.code() == 0 {
						t.Errorf("fork bomb under RLIMIT_NPROC: timed out %v, code %d", o.res.TimedOut, o.code())
					}
					return
				}
				if o.res.TimedOut || o.res.Limit != "pids" || o.code() != sandbox.ExitKilledByLimit {
					t.Errorf("fork bomb: timed out %v, limit %q, code %d; want limit pids, 137", o.res.TimedOut, o.res.Limit, o.code())
				}
				if got := sandbox.LimitReason(o.res, p); got != "process limit (48) reached" {
					t.Errorf("reason %q", got)
				}
			})
		}
		t.Run("control", func(t *testing.T) {
			p := shPolicy(mode, t.TempDir(), "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 1 & done; wait; echo done")
			p.Pids = 48
			o := runPolicy(t, p)
			if o.err != nil || o.code() != 0 || o.res.Limit != "" {
				t.Errorf("10 processes under --pids 48: code %d limit %q err %v", o.code(), o.res.Limit, o.err)
			}
		})
	})
}
