package judge_test

import (
	"context"
	"testing"

	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// cgroupHolds reports what the probe says the limits rest on here: a
// cgroup (the kernel names the limit it enforced) or rlimits alone.
func cgroupHolds(t *testing.T) bool {
	t.Helper()
	rep, err := sandbox.Probe(context.Background())
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	l := rep.Layer("cgroup")
	return l != nil && l.Status == "ok"
}

// TestJudgeLimits: a patch whose test run is a fork bomb or a memory bomb
// fails with a reason naming the limit, and leaves nothing running; the
// honest fix passes under the same limits (the positive control: the limits
// do not fail a test run that stays under them). Without a cgroup a memory
// bomb meets RLIMIT_DATA, per process: its allocation fails (and this one
// fails the run), but nothing names the limit — what the probe says holds.
func TestJudgeLimits(t *testing.T) {
	t.Parallel()
	cgroup := cgroupHolds(t)
	repo := fixture(t, map[string]string{
		"lib.sh":   "add() { echo $(($1 - $2)); }\n",
		"check.sh": ". ./lib.sh\np=0; f=0\n[ \"$(add 2 3)\" = 5 ] && p=$((p+1)) || f=$((f+1))\necho \"$p passed, $f failed\"\n[ $f = 0 ]\n",
	})
	fix := "add() { echo $(($1 + $2)); }\n"
	memReason := "memory limit (256 MiB) reached"
	if !cgroup {
		memReason = ""
	}
	cases := []judged{
		{name: "honest fix", edits: map[string]edit{"lib.sh": {content: fix}}, pass: true},
		{name: "fork bomb", pass: false, reason: "process limit (40) reached", edits: map[string]edit{
			"lib.sh": {content: fix + "bash -c ':(){ sleep 301.777 & : | : & }; :; sleep 80'\n"}}},
		{name: "memory bomb", pass: false, reason: memReason, edits: map[string]edit{
			"lib.sh": {content: fix + "tail /dev/zero || exit 3\n"}}},
	}
	// 256 MiB, not less: without a cgroup RLIMIT_DATA binds the init as
	// well, and here the init is this test binary (no forkbomb-init
	// beside it), whose private mappings are some 130 MB from the start;
	// under 128 MiB it could map nothing more and, now and then, died
	// before starting the command (forkbomb-init's are some 75 MB).
	judgeAll(t, repo, "/bin/sh check.sh", nil, cases, func(o *judge.Options) {
		o.Limits = sandbox.Limits{Memory: 256 << 20, Pids: 40}
	})
	if s := testutil.ProcsLeft("301.777"); len(s) > 0 {
		t.Errorf("LEAK: %d fork-bomb processes outlived the judge", len(s))
	}
}
