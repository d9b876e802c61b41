package worldrace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/world"
)

// cliAgent stands in for an agent CLI such as the claude-code engine's: it needs its workspace
// to be a tool server, and runs one confined command with the race's confinement — here a
// copy of a prepared world over the world's copy, as the MCP server's saves would leave it —
// failing (status 3) when it can read the trunk.
type cliAgent struct{ trunk string }

func (cliAgent) Info() engine.Info { return engine.Info{Name: "cli"} }

func (a cliAgent) Run(ctx context.Context, w engine.Workspace, t engine.Task) engine.Outcome {
	ts, ok := w.(engine.ToolServer)
	if !ok {
		return engine.Outcome{State: event.ForkCrashed, Err: errors.New("no MCP server in the workspace")}
	}
	if name, argv, _ := ts.MCPServer(); name != "world" || len(argv) < 4 || argv[2] != "mcp" {
		return engine.Outcome{State: event.ForkCrashed, Err: fmt.Errorf("MCP server %s %v", name, argv)}
	}
	made := filepath.Join(filepath.Dir(a.trunk), "made", fmt.Sprintf("%d.world", t.Fork))
	p := sandbox.Policy{Command: []string{"/bin/sh", "-c", `if [ -s "$TRUNK" ]; then echo LEAK: the trunk is readable >&2; exit 3; fi; cp "$MADE" world.world.new && mv world.world.new world.world`},
		SetEnv: []string{"TRUNK=" + a.trunk, "MADE=" + made}, ReadOnly: []string{filepath.Dir(made)}, Timeout: time.Minute}
	t.Confine(&p)
	res, err := w.Exec(ctx, p, sandbox.Stdio{Stderr: t.Log})
	if err != nil {
		return engine.Outcome{State: event.ForkCrashed, Err: err}
	}
	if res.ExitCode != 0 {
		return engine.Outcome{State: event.ForkCrashed, Exit: res.ExitCode}
	}
	return engine.Outcome{State: event.ForkExited}
}

// TestRaceConfined: a Confined world race through run.Race — the agent gets the world's tool
// server through run's AgentWorkspaces seam, its sandbox holds a copy whose result comes back
// as the branch, and the trunk is among the paths the race hides (Bases' repository). Branch 0
// leaves the right answer and wins; branch 1's fails its check. Control: the trunk is readable
// in a sandbox without the race's Hide.
func TestRaceConfined(t *testing.T) {
	outside, unmasked := testutil.OutsideDir(t)
	trunk := filepath.Join(outside, "trunk.world")
	if err := world.New().Save(trunk); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(trunk)
	os.Mkdir(filepath.Join(outside, "made"), 0o755)
	for n, answer := range []string{"42\n", "7\n"} {
		saveWorld(t, filepath.Join(outside, "made", fmt.Sprintf("%d.world", n)), "/work/answer", answer)
	}
	runs := filepath.Join(t.TempDir(), "runs")
	res, err := Run(context.Background(), Options{Trunk: trunk, Confined: true, Limits: world.DefaultLimits,
		Race: run.Options{Forks: 2, Test: "grep -qx 42 /work/answer", Task: "answer", Engine: cliAgent{trunk: trunk}, RunsDir: runs}})
	if err != nil {
		t.Fatalf("%v\n%s", err, agentLogs(res.Dir))
	}
	if res.Run.Status != event.RunWon || *res.Run.Winner != 0 || res.Run.Fork[1].Verdict == event.Pass {
		t.Fatalf("run %+v\n%s", res.Run, agentLogs(res.Dir))
	}
	won, err := world.Load(trunk+".winner", 0)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := won.FS.ReadFile("/work/answer"); string(b) != "42\n" {
		t.Errorf("the winner's answer %q", b)
	}
	if after, _ := os.ReadFile(trunk); !bytes.Equal(before, after) {
		t.Errorf("the trunk changed")
	}
	if unmasked {
		if r, err := sandbox.Run(context.Background(), sandbox.Policy{Command: []string{"/bin/sh", "-c", `[ -s "$TRUNK" ]`},
			SetEnv: []string{"TRUNK=" + trunk}, Workdir: t.TempDir(), Timeout: time.Minute}, sandbox.Stdio{}); err != nil || r.ExitCode != 0 {
			t.Errorf("control: without the race's Hide the trunk is not readable (%v)", err)
		}
	}
}

// agentLogs are a record's agent logs, for a failure's message.
func agentLogs(dir string) string {
	logs, _ := filepath.Glob(filepath.Join(dir, "forks", "*", "agent.log"))
	var out bytes.Buffer
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		fmt.Fprintf(&out, "%s:\n%s\n", l, b)
	}
	return out.String()
}
