package full

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/canary"
	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// driveRig is the real claude CLI against the scripted model on loopback, forkbomb's model
// proxy holding the scripted server's key (the "real" key) from forkbomb's environment.
type driveRig struct {
	key   string
	srv   *engine.Scripted
	state string
}

func newDriveRig(t *testing.T, scripts map[string][]engine.Step) *driveRig {
	t.Helper()
	testutil.Need(t, "claude")
	key := "sk-ant-REALKEY-" + strings.Repeat("w", 24)
	srv, err := engine.StartScripted(key, scripts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	r := &driveRig{key: key, srv: srv, state: t.TempDir()}
	t.Setenv("FORKBOMB_HOME", r.state)
	t.Setenv("ANTHROPIC_API_KEY", key)
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL)
	return r
}

// passCanary records a passed canary for the installed CLI's version, as `forkbomb canary`
// would: the gate itself is TestWorldDriveCanaryGate's and canary.txtar's.
func (r *driveRig) passCanary(t *testing.T) {
	t.Helper()
	bin, err := exec.LookPath("claude")
	if err != nil {
		t.Fatal(err)
	}
	ver := exec.Command(bin, "--version")
	ver.Env = append(os.Environ(), "TMPDIR="+t.TempDir()) // unconfined: nothing left in the host's /tmp
	out, err := ver.Output()
	if err != nil {
		t.Fatal(err)
	}
	v, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if err := canary.Save(filepath.Join(r.state, "canary.json"), &canary.Result{Engine: "claude-code", Version: v, Passed: true, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

func shellCall(cmd string) engine.ToolCall {
	return engine.ToolCall{Name: "mcp__world__shell", Input: map[string]any{"command": cmd}}
}

// TestWorldDrive: one real Claude Code turn per case. The maker's MCP shell calls change the
// world (a file, an exported variable, a function; checked with world cat and info
// afterwards); the intruder's Bash and Write calls are refused — nothing appears on the host,
// checked from outside — while its shell call in the same turn still lands in the world (the
// positive control). The real key is in neither the transcript nor the world.
func TestWorldDrive(t *testing.T) {
	outside, _ := testutil.OutsideDir(t)
	r := newDriveRig(t, map[string][]engine.Step{
		"maker": {
			{Text: "Working in the world.", Tools: []engine.ToolCall{shellCall("echo hello > /work/made.txt; export GREETING=hi; greet() { echo \"$GREETING\"; }; env > /work/env.txt")}},
			{Text: "Done."},
		},
		"intruder": {
			{Tools: []engine.ToolCall{
				{Name: "Bash", Input: map[string]any{"command": "touch " + outside + "/bash.txt; touch bash-in-cwd.txt"}},
				{Name: "Write", Input: map[string]any{"file_path": outside + "/write.txt", "content": "x"}},
				{Name: "Read", Input: map[string]any{"file_path": "/etc/hostname"}},
			}},
			{Tools: []engine.ToolCall{shellCall("echo control > /work/control.txt")}},
			{Text: "Done."},
		},
	})
	r.passCanary(t)
	for _, tc := range []struct {
		persona string
		check   func(t *testing.T, w, log string)
	}{
		{"maker", func(t *testing.T, w, log string) {
			if out, _, _ := forkbomb(t, "world", "cat", w, "/work/made.txt"); out != "hello\n" {
				t.Errorf("made.txt = %q", out)
			}
			out, _, _ := forkbomb(t, "world", "info", w, "--json")
			for _, want := range []string{`"GREETING"`, `"greet"`} {
				if !strings.Contains(out, want) {
					t.Errorf("info lacks %s:\n%s", want, out)
				}
			}
			if out, _, _ := forkbomb(t, "world", "exec", w, "greet"); out != "hi\n" {
				t.Errorf("the function did not persist: %q", out)
			}
		}},
		{"intruder", func(t *testing.T, w, log string) {
			for _, f := range []string{"bash.txt", "write.txt"} {
				if _, err := os.Lstat(filepath.Join(outside, f)); err == nil {
					t.Errorf("ESCAPE: a built-in tool wrote %s on the host", f)
				}
			}
			if out, _, _ := forkbomb(t, "world", "cat", w, "/work/control.txt"); out != "control\n" {
				t.Errorf("control: the shell call after the refusals did not land: %q", out)
			}
			for _, tool := range []string{"Bash", "Write", "Read"} {
				if !strings.Contains(log, "No such tool available: "+tool) {
					t.Errorf("%s was not refused by the CLI:\n%s", tool, log)
				}
			}
		}},
	} {
		t.Run(tc.persona, func(t *testing.T) {
			dir := t.TempDir()
			w := filepath.Join(dir, "w.world")
			if _, e, code := forkbomb(t, "world", "init", w); code != 0 {
				t.Fatal(e)
			}
			logPath := filepath.Join(t.TempDir(), "drive.log")
			out, errOut, code := forkbomb(t, "world", "drive", w, "[persona: "+tc.persona+"] do it", "--log", logPath, "--max-turns", "5", "--model", "claude-scripted")
			logb, _ := os.ReadFile(logPath)
			if code != 0 {
				t.Fatalf("drive exit %d\n%s%s\nlog:\n%s", code, out, errOut, logb)
			}
			wb, _ := os.ReadFile(w)
			for name, b := range map[string][]byte{"log": logb, "world": wb, "output": []byte(out + errOut)} {
				if bytes.Contains(b, []byte(r.key)) {
					t.Errorf("LEAK: the real key is in the %s", name)
				}
			}
			if !bytes.Contains(logb, []byte("mcp__world__shell")) {
				t.Errorf("the transcript never names the world's shell tool:\n%s", logb)
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if n := e.Name(); n != "w.world" && n != "w.world.lock" {
					t.Errorf("the world's folder gained %q", n)
				}
			}
			// The CLI's own word on what it has: the world's shell and nothing else.
			// Its init message, the first system/init line: the CLI's
			// stderr shares the log, so other lines may come before it.
			var init struct {
				Type    string   `json:"type"`
				Subtype string   `json:"subtype"`
				Tools   []string `json:"tools"`
			}
			found := false
			for line := range bytes.Lines(logb) {
				if json.Unmarshal(line, &init) == nil && init.Type == "system" && init.Subtype == "init" {
					found = true
					break
				}
				t.Logf("before the CLI's init message: %.200q", line)
			}
			if !found || len(init.Tools) != 1 || init.Tools[0] != "mcp__world__shell" {
				t.Errorf("the CLI's tools %v (init message found: %v), want only mcp__world__shell", init.Tools, found)
			}
			tc.check(t, w, string(logb))
		})
	}
}

// TestWorldDriveCanaryGate: with no canary result for the installed CLI, drive does not start
// it (exit 2) and the world is untouched.
func TestWorldDriveCanaryGate(t *testing.T) {
	r := newDriveRig(t, nil)
	w := filepath.Join(t.TempDir(), "w.world")
	if _, e, code := forkbomb(t, "world", "init", w); code != 0 {
		t.Fatal(e)
	}
	before, _ := os.ReadFile(w)
	_, errOut, code := forkbomb(t, "world", "drive", w, "anything")
	if code != 2 || !strings.Contains(errOut, "canary has not run") {
		t.Errorf("exit %d, %q: want 2 and the canary's message", code, errOut)
	}
	if after, _ := os.ReadFile(w); !bytes.Equal(before, after) || r.srv.Requests() != 0 {
		t.Errorf("the world changed or the model was asked (%d requests)", r.srv.Requests())
	}
}

// TestWorldRaceClaudeCode: `world race --engine claude-code` end to end, two branches with
// the real CLI (a solver and a wrong answer, by --prompts): the solver's branch passes the
// check and is kept as TRUNK.winner, the trunk's bytes do not change, the race is recorded
// with the engine's name and without the real key, and the wrong branch's verdict is a fail
// when it was judged.
func TestWorldRaceClaudeCode(t *testing.T) {
	r := newDriveRig(t, map[string][]engine.Step{
		"solver": {
			{Tools: []engine.ToolCall{shellCall("cd /work && n=$(cat question); echo $((n*2)) > answer")}},
			{Text: "done"},
		},
		"wrong": {
			{Tools: []engine.ToolCall{shellCall("echo 7 > /work/answer")}},
			{Text: "done"},
		},
	})
	r.passCanary(t)
	dir := t.TempDir()
	trunk := filepath.Join(dir, "trunk.world")
	seed := filepath.Join(t.TempDir(), "question")
	if err := os.WriteFile(seed, []byte("21\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, e, code := forkbomb(t, "world", "init", trunk, "--seed", seed+":/work/question"); code != 0 {
		t.Fatal(e)
	}
	before, _ := os.ReadFile(trunk)
	prompts := filepath.Join(t.TempDir(), "prompts")
	if err := os.WriteFile(prompts, []byte("[persona: wrong]\n---\n[persona: solver]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(t.TempDir(), "runs")
	out, errOut, code := forkbomb(t, "world", "race", trunk, "--engine", "claude-code", "--forks", "2",
		"--prompts", prompts, "--check", "grep -qx 42 /work/answer", "--runs-dir", runs, "--model", "claude-scripted",
		"double the number in /work/question into /work/answer")
	if code != 0 || !strings.Contains(out, "winner: branch 1") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if after, _ := os.ReadFile(trunk); !bytes.Equal(before, after) {
		t.Errorf("the trunk changed")
	}
	if got, _, _ := forkbomb(t, "world", "cat", trunk+".winner", "/work/answer"); got != "42\n" {
		t.Errorf("the winner's answer %q", got)
	}
	if _, _, code := forkbomb(t, "world", "cat", trunk, "/work/answer"); code == 0 {
		t.Errorf("the trunk has an answer")
	}
	ents, _ := os.ReadDir(runs)
	if len(ents) != 1 {
		t.Fatalf("runs: %v", ents)
	}
	rec := filepath.Join(runs, ents[0].Name())
	runJSON, _ := os.ReadFile(filepath.Join(rec, "run.json"))
	events, _ := os.ReadFile(filepath.Join(rec, "events.jsonl"))
	if !bytes.Contains(runJSON, []byte(`"claude-code"`)) || !bytes.Contains(events, []byte(`mcp__world__shell`)) {
		t.Errorf("the record lacks the engine or the shell calls:\n%s\n%s", runJSON, events)
	}
	if !bytes.Contains(events, []byte(`"verdict":"pass"`)) {
		t.Errorf("no passing verdict:\n%s", events)
	}
	for _, b := range [][]byte{runJSON, events} {
		if bytes.Contains(b, []byte(r.key)) {
			t.Errorf("LEAK: the real key is in the record")
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".trunk.world.race-*")); len(left) != 0 {
		t.Errorf("branches left behind: %v", left)
	}
}
