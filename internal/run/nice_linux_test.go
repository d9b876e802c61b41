package run_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/run"
)

// TestRaceAgentsNiced: an agent's commands run run.AgentNice steps below
// forkbomb's CPU priority, and the judge's test run at forkbomb's own.
// The agent writes its nice value into its patch; the judged test command
// passes only at forkbomb's nice, so the fork's win is the control that
// the judge is not lowered with the agents.
func TestRaceAgentsNiced(t *testing.T) {
	t.Parallel()
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	own := 20 - raw
	o := options(t, repo(t))
	o.Forks = 1
	o.Engine = engine.Command{Argv: []string{"/bin/sh", "-c", `awk '{print $19}' /proc/$$/stat > agent-nice; sed -i 's/\$1 - \$2/$1 + $2/' lib.sh`}}
	o.Test = `[ "$(awk '{print $19}' /proc/$$/stat)" = ` + strconv.Itoa(own) + ` ] && /bin/sh check.sh`
	r, recDir, err := run.Race(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != event.RunWon {
		t.Fatalf("status %s, fork 0: %s (the judge's run is not at forkbomb's nice %d, or the fix is missing)", r.Status, r.Fork[0].Reason, own)
	}
	patch, err := os.ReadFile(filepath.Join(recDir, "forks", "0", "patch"))
	if err != nil {
		t.Fatal(err)
	}
	want := "+" + strconv.Itoa(min(own+run.AgentNice, 19)) + "\n"
	if !strings.Contains(string(patch), "agent-nice") || !strings.Contains(string(patch), want) {
		t.Errorf("the agent's nice is not forkbomb's %d + %d; its patch:\n%s", own, run.AgentNice, patch)
	}
}
