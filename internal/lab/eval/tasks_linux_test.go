package eval_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/lab"
	"github.com/forkbomb/forkbomb/internal/lab/eval"
	"github.com/forkbomb/forkbomb/internal/lab/mine"
	"github.com/forkbomb/forkbomb/internal/record"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestEvalMinedTasks mines the semver history (internal/lab/mine's
// fixture) into two tasks and races two "models" of the api engine on
// them, played by the scripted model: "skilled" writes version.go as the
// fixing commit left it (which solves both), "unskilled" gives up. The
// board ranks skilled first with both tasks solved; a second evaluation
// adds to the board, never replaces it.
func TestEvalMinedTasks(t *testing.T) {
	testutil.Need(t, "go", "git")
	dir := t.TempDir()
	repo := filepath.Join(dir, "semver")
	bundle, err := filepath.Abs("../mine/testdata/semver.bundle")
	if err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, dir, "clone", "-q", "-b", "main", bundle, repo)
	fixed := testutil.Git(t, repo, "show", "HEAD~1:version.go") + "\n"
	store, err := workspace.Open(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	testutil.OpenOverlayWork(t, store.Root)
	ls := &lab.Store{Dir: filepath.Join(dir, "state", "lab")}
	cache := filepath.Join(dir, "state", "judge")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	mined, err := mine.Run(ctx, mine.Options{Store: store, Lab: ls, CacheDir: cache, Repo: repo, Last: 10, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(mined.Kept) != 2 {
		t.Fatalf("mined %d tasks, want 2: %+v", len(mined.Kept), mined)
	}
	tasks, err := eval.SelectTasks(ls, "mined:semver")
	if err != nil || len(tasks) != 2 {
		t.Fatalf("mined:semver selects %d tasks: %v", len(tasks), err)
	}

	const key = "eval-test-placeholder-key"
	srv, err := engine.StartScripted(key, map[string][]engine.Step{
		"skilled": {
			{Text: "Reading.", Tools: []engine.ToolCall{{Name: "editor", Input: map[string]any{"command": "view", "path": "version.go"}}}},
			{Text: "Writing it.", Tools: []engine.ToolCall{{Name: "editor", Input: map[string]any{"command": "create", "path": "version.go", "file_text": fixed}}}},
			{Text: "Done."},
		},
		"unskilled": {{Text: "I cannot do it."}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var entries []eval.Entry
	for _, m := range []string{"unskilled", "skilled"} {
		a, err := engine.New(ctx, "api", engine.Settings{Provider: "anthropic", Model: m, BaseURL: srv.URL, APIKey: key, MaxTurns: 5, PriceIn: 3, PriceOut: 15})
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, eval.Entry{Name: "api:" + m, Agent: a})
	}
	runs := filepath.Join(dir, "runs")
	board := &eval.Board{Path: filepath.Join(ls.Dir, "eval", "board.json")}
	var progress bytes.Buffer
	o := eval.TasksOptions{Store: store, RunsDir: runs, CacheDir: cache, Tasks: tasks, Engines: entries, Timeout: 2 * time.Minute, Board: board, Progress: &progress}
	attempts, err := eval.RunTasks(ctx, o)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if len(attempts) != 4 {
		t.Fatalf("%d attempts, want 4", len(attempts))
	}
	for _, a := range attempts {
		r, err := record.Load(runs, a.Run)
		if err != nil || (r.Winner != nil) != a.Fixed || a.Fixed != (a.Engine == "api:skilled") {
			t.Errorf("attempt %+v (run %v)", a, err)
		}
	}
	// The same again, with the skilled model alone: the board keeps both.
	o.Engines = entries[1:]
	o.Tasks = tasks[:1]
	if _, err := eval.RunTasks(ctx, o); err != nil {
		t.Fatal(err)
	}
	all, err := board.Attempts()
	if err != nil {
		t.Fatal(err)
	}
	table := eval.Standings(all)
	var tbl bytes.Buffer
	eval.WriteStandings(&tbl, table)
	t.Logf("\n%s\n%s", progress.String(), tbl.String())
	if len(all) != 5 || len(table) != 2 {
		t.Fatalf("board holds %d attempts, %d engines: want 5 and 2", len(all), len(table))
	}
	top, last := table[0], table[1]
	if top.Engine != "api:skilled" || top.Solved != 3 || top.Attempts != 3 || top.TasksSolved != 2 || last.Solved != 0 || last.Tasks != 2 {
		t.Errorf("ranked wrong:\n%s", tbl.String())
	}
	if top.Tokens == 0 || top.CostUSD == 0 {
		t.Errorf("tokens or cost missing: %+v", top)
	}
	if matches, _ := filepath.Glob(filepath.Join(ls.Dir, "eval", ".board-*")); len(matches) != 0 {
		t.Errorf("temp files left beside the board: %v", matches)
	}
	if _, err := os.Stat(board.Path); err != nil {
		t.Error(err)
	}
}
