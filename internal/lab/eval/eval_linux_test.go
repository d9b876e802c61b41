package eval_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/lab/eval"
	"github.com/forkbomb/forkbomb/internal/lab/mutant"
	"github.com/forkbomb/forkbomb/internal/record"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

const calc = `package m

// Add adds.
func Add(a, b int) int { return a + b }

// Neg negates.
func Neg(x int) int { return -x }
`

const calcTest = `package m

import "testing"

func TestAdd(t *testing.T) {
	if Add(2, 3) != 5 {
		t.Fatal("add")
	}
}

func TestNeg(t *testing.T) {
	if Neg(2) != -2 {
		t.Fatal("neg")
	}
}
`

// TestEvalRanksKnownSkill: two "models" of the api engine, played by the
// scripted model server: "skilled" rewrites calc.go as it was (fixing any
// fault in it), "unskilled" gives up. The table must put skilled first
// with every fault fixed and unskilled with none, and every attempt must
// be a run in the runs folder.
func TestEvalRanksKnownSkill(t *testing.T) {
	testutil.Need(t, "go", "git")
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	os.MkdirAll(repo, 0o755)
	for name, content := range map[string]string{"go.mod": "module example.com/m\n\ngo 1.22\n", "calc.go": calc, "calc_test.go": calcTest} {
		os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644)
	}
	testutil.Git(t, repo, "init", "-q")
	testutil.Git(t, repo, "add", "-A")
	testutil.Git(t, repo, "commit", "-qm", "base")

	const key = "eval-test-placeholder-key"
	srv, err := engine.StartScripted(key, map[string][]engine.Step{
		"skilled": {
			{Text: "Reading.", Tools: []engine.ToolCall{{Name: "editor", Input: map[string]any{"command": "view", "path": "calc.go"}}}},
			{Text: "Restoring the arithmetic.", Tools: []engine.ToolCall{{Name: "editor", Input: map[string]any{"command": "create", "path": "calc.go", "file_text": calc}}}},
			{Text: "Fixed."},
		},
		"unskilled": {{Text: "I cannot find it."}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var entries []eval.Entry
	for _, m := range []string{"unskilled", "skilled"} {
		a, err := engine.New(context.Background(), "api", engine.Settings{Provider: "anthropic", Model: m, BaseURL: srv.URL, APIKey: key, MaxTurns: 5, PriceIn: 3, PriceOut: 15})
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, eval.Entry{Name: "api:" + m, Agent: a})
	}
	store, err := workspace.Open(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	testutil.OpenOverlayWork(t, store.Root)
	runs := filepath.Join(dir, "runs")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	res, err := eval.Run(ctx, eval.Options{
		Store: store, RunsDir: runs, CacheDir: filepath.Join(dir, "judge"), Repo: repo,
		Test: "go test -count=1 ./...", Faults: 2, Engines: entries, Timeout: 2 * time.Minute,
		Mutants: mutant.Options{Forks: 2, Timeout: 30 * time.Second}, Progress: &progress,
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	var tbl bytes.Buffer
	res.WriteTable(&tbl)
	t.Logf("\n%s\n%s", progress.String(), tbl.String())
	if len(res.Faults) != 2 || len(res.Table) != 2 {
		t.Fatalf("faults %d, rows %d", len(res.Faults), len(res.Table))
	}
	if top, last := res.Table[0], res.Table[1]; top.Engine != "api:skilled" || top.Fixed != 2 || last.Fixed != 0 {
		t.Errorf("ranked wrong:\n%s", tbl.String())
	}
	if res.Table[0].MedianTurns < 2 || res.Table[0].Tokens == 0 || res.Table[0].CostUSD == 0 {
		t.Errorf("turns, tokens or cost missing: %+v", res.Table[0])
	}
	for _, a := range res.Attempts {
		r, err := record.Load(runs, a.Run)
		if err != nil {
			t.Errorf("attempt %s/%s is not a run: %v", a.Engine, a.Fault, err)
			continue
		}
		if (r.Winner != nil) != a.Fixed || !strings.Contains(r.Task, "fails") {
			t.Errorf("run %s disagrees with the attempt %+v", a.Run, a)
		}
	}
}
