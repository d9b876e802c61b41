package full

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/engine"
)

// TestWorldRaceRecord: `world race` with the api engine against the scripted model server on
// loopback is a run like any other. A winning race exits 0 and keeps TRUNK.winner; its record
// is read by `forkbomb show` (status, the trunk as the repository at its SHA-256, the check as
// the test, the verdicts and the winner's patch), `forkbomb runs --json` and `forkbomb export`
// (a static replay); run's progress is on stderr; the key is nowhere in the record. A losing
// race exits 1 with "no branch passed the check" and a no-winner record, and keeps no winner.
func TestWorldRaceRecord(t *testing.T) {
	key := "sk-ant-REALKEY-" + strings.Repeat("r", 24)
	srv, err := engine.StartScripted(key, map[string][]engine.Step{
		"solver": {
			{Tools: []engine.ToolCall{{Name: "shell", Input: map[string]any{"command": "cd /work && n=$(cat question); echo $((n*2)) > answer"}}}},
			{Text: "done"},
		},
		"wrong": {
			{Tools: []engine.ToolCall{{Name: "shell", Input: map[string]any{"command": "echo 7 > /work/answer"}}}},
			{Text: "done"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	t.Setenv("FORKBOMB_HOME", t.TempDir())
	t.Setenv("ANTHROPIC_API_KEY", key)
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL)
	seed := filepath.Join(t.TempDir(), "question")
	if err := os.WriteFile(seed, []byte("21\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		persona string
		won     bool
	}{{"solver", true}, {"wrong", false}} {
		t.Run(tc.persona, func(t *testing.T) {
			trunk := filepath.Join(t.TempDir(), "trunk.world")
			if _, e, code := forkbomb(t, "world", "init", trunk, "--seed", seed+":/work/question"); code != 0 {
				t.Fatal(e)
			}
			runs := filepath.Join(t.TempDir(), "runs")
			out, errOut, code := forkbomb(t, "world", "race", trunk, "--forks", "2", "--check", "grep -qx 42 /work/answer",
				"--runs-dir", runs, "--model", "scripted", "[persona: "+tc.persona+"] double the number in /work/question into /work/answer")
			id, _, _ := strings.Cut(strings.TrimPrefix(out, "run "), "\n")
			if id == "" || !strings.Contains(errOut, "run "+id+": 2 forks of "+trunk) {
				t.Fatalf("exit %d, no run id or progress:\n%s%s", code, out, errOut)
			}
			show, e, scode := forkbomb(t, "show", id, "--runs-dir", runs)
			if scode != 0 || !strings.Contains(show, "repo: "+trunk+" at ") || !strings.Contains(show, "test: grep -qx 42 /work/answer") {
				t.Fatalf("show: exit %d\n%s%s", scode, show, e)
			}
			list, _, _ := forkbomb(t, "runs", "--json", "--runs-dir", runs)
			var listed []struct{ ID, Status string }
			if err := json.Unmarshal([]byte(list), &listed); err != nil || len(listed) != 1 || listed[0].ID != id {
				t.Fatalf("runs --json: %v\n%s", err, list)
			}
			if _, e, code := forkbomb(t, "export", id, filepath.Join(t.TempDir(), "replay"), "--runs-dir", runs); code != 0 {
				t.Errorf("export: exit %d: %s", code, e)
			}
			filepath.Walk(filepath.Join(runs, id), func(p string, fi os.FileInfo, err error) error {
				if b, _ := os.ReadFile(p); err == nil && !fi.IsDir() && bytes.Contains(b, []byte(key)) {
					t.Errorf("LEAK: the key is in %s", p)
				}
				return nil
			})
			if !tc.won {
				if code != 1 || !strings.Contains(out, "no branch passed the check") || listed[0].Status != "no-winner" ||
					!strings.Contains(show, "fail check exited 1") {
					t.Errorf("exit %d, status %s\n%s%s", code, listed[0].Status, out, show)
				}
				if _, err := os.Lstat(trunk + ".winner"); err == nil {
					t.Errorf("a winner file without a winner")
				}
				return
			}
			if code != 0 || !strings.Contains(out, "kept as "+trunk+".winner") || listed[0].Status != "won" {
				t.Fatalf("exit %d, status %s\n%s%s", code, listed[0].Status, out, errOut)
			}
			if !strings.Contains(show, "pass check exited 0") || !strings.Contains(show, "+++ b/answer\n@@ -0,0 +1 @@\n+42\n") {
				t.Errorf("show lacks the verdict or the winner's patch:\n%s", show)
			}
			if got, _, _ := forkbomb(t, "world", "cat", trunk+".winner", "/work/answer"); got != "42\n" {
				t.Errorf("the winner's answer %q", got)
			}
		})
	}
}
