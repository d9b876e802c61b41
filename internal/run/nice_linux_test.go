package run_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestRaceAgentsYieldToJudge: a running agent's group (its cgroup's CPU
// weight, else its session's group) gives way to the judge, run.AgentNice
// steps down, while the judge has work, and only then: read from outside,
// an agent still working is at forkbomb's priority once the baseline is
// done and no patch is being judged (the control), and lowered while
// another fork's patch is judged. Each of its processes keeps forkbomb's
// own nice throughout; the judged test command passes only at forkbomb's
// nice, so the win shows the judge is not lowered with the agents.
func TestRaceAgentsYieldToJudge(t *testing.T) {
	t.Parallel()
	own, err := testutil.ProcNice(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if run.AgentNice != 10 {
		t.Fatalf("the weights read below are nice 10's, and run.AgentNice is %d", run.AgentNice)
	}
	// steps reads how far pid's group is below forkbomb's: -1 unknown.
	steps := func(pid int) int {
		if n, ok := testutil.GroupSteps(pid); ok {
			return n
		}
		return -1
	}
	stamp := time.Now().UnixNano()
	agentMark := fmt.Sprintf("yield-agent-%d", stamp) // in the inner sh's argv alone
	judgeMark := fmt.Sprintf("yield-judge-%d", time.Now().UnixNano())
	o := options(t, repo(t))
	o.Forks = 2
	// fork 0 makes its fix once the control is read (at most two minutes)
	g := newGate(t)
	o.Engine = engine.Command{Argv: []string{"/bin/sh", "-c", `case $FORKBOMB_FORK in
0) i=0; while [ ! -e '` + g.path + `' ] && [ $i -lt 2400 ]; do sleep 0.05; i=$((i+1)); done; sed -i 's/\$1 - \$2/$1 + $2/' lib.sh ;;
1) m=yield-agent-; sh -c "sleep 300; : ${m}` + strconv.FormatInt(stamp, 10) + `" ;;
esac`}}
	o.Test = `: ` + judgeMark + `; [ "$(awk '{print $19}' /proc/$$/stat)" = ` + strconv.Itoa(own) + ` ] && sleep 2 && /bin/sh check.sh`

	type seen struct {
		idle, lowered int // the agent's steps with no judge work, and most while judging
		nice          int
		why           string
	}
	watched := make(chan seen, 1)
	go func() {
		s := seen{idle: -2, lowered: -2}
		defer func() { g.open(t); watched <- s }()
		pid := 0
		for deadline := time.Now().Add(time.Minute); s.idle != 0; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				s.why = fmt.Sprintf("no agent at forkbomb's priority with the judge idle in a minute (pid %d, last read %d)", pid, s.idle)
				return
			}
			if p := testutil.ProcsWith(agentMark); len(p) > 0 {
				pid = p[0]
			}
			if pid != 0 && len(testutil.ProcsWith(judgeMark)) == 0 {
				s.idle = steps(pid)
			}
		}
		n, nerr := testutil.ProcNice(pid)
		if nerr != nil {
			s.why = "the agent's nice: " + nerr.Error()
			return
		}
		s.nice = n
		g.open(t)
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if len(testutil.ProcsWith(judgeMark)) == 0 {
				continue
			}
			n := steps(pid)
			if n == -1 {
				p := testutil.ProcsWith(agentMark)
				if len(p) == 0 {
					s.why = "the agent was gone before another fork's patch was judged"
					return
				}
				pid = p[0]
			}
			s.lowered = max(s.lowered, n)
			if s.lowered == run.AgentNice {
				return
			}
		}
		s.why = "the agent was not seen lowered while the judge worked"
	}()
	r, _, err := run.Race(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	s := <-watched
	if s.idle == -1 && !testutil.Autogroup() {
		testutil.SkipOrFail(t, "neither a cgroup of forkbomb's with a CPU weight nor autogroup here: the agents' yield does nothing (SECURITY.md)")
	}
	if s.why != "" {
		t.Error(s.why)
	}
	if s.idle != 0 || s.lowered != run.AgentNice {
		t.Errorf("the agent's group: %d steps down with the judge idle (want 0), at most %d while it judged (want %d)", s.idle, s.lowered, run.AgentNice)
	}
	if s.nice != own {
		t.Errorf("the agent's own nice is %d; want forkbomb's %d", s.nice, own)
	}
	if r.Status != event.RunWon || r.Winner == nil || *r.Winner != 0 {
		t.Fatalf("status %s, fork 0: %s (the judge's run is not at forkbomb's nice %d, or the fix is missing)", r.Status, r.Fork[0].Reason, own)
	}
}
