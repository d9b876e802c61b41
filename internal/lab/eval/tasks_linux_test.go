package eval_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/lab"
	"github.com/forkbomb/forkbomb/internal/lab/eval"
	"github.com/forkbomb/forkbomb/internal/lab/mine"
	"github.com/forkbomb/forkbomb/internal/record"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// sloppyExtra is what the "sloppy" model adds to a correct version.go:
// code no test calls, so every mutant of it survives the verifier.
const sloppyExtra = `
// Between reports whether v is at least lo and older than hi.
func Between(v, lo, hi Version) bool {
	return Compare(v, lo) >= 0 && Compare(v, hi) < 0
}

// Bump is the next patch version.
func Bump(v Version) Version {
	v.Patch++
	return v
}
`

// TestEvalMinedTasks mines the semver history (internal/lab/mine's
// fixture) into two tasks and races three "models" of the api engine on
// them, played by the scripted model: "skilled" writes version.go as the
// fixing commit left it (which solves both), "sloppy" writes the same
// plus two functions no test calls (which solves both too, but under
// tests that pin few of the lines it wrote), "unskilled" gives up. The
// board ranks the solvers above unskilled; the verifier's word is on each
// pass, and the strength columns tell skilled's well-tested passes from
// sloppy's weak ones. A second evaluation adds to the board, never
// replaces it.
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
		"sloppy": {
			{Text: "Writing it, and more.", Tools: []engine.ToolCall{{Name: "editor", Input: map[string]any{"command": "create", "path": "version.go", "file_text": fixed + sloppyExtra}}}},
			{Text: "Done."},
		},
		"unskilled": {{Text: "I cannot do it."}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var entries []eval.Entry
	for _, m := range []string{"unskilled", "skilled", "sloppy"} {
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
	if len(attempts) != 6 {
		t.Fatalf("%d attempts, want 6", len(attempts))
	}
	for _, a := range attempts {
		r, err := record.Load(runs, a.Run)
		if err != nil || (r.Winner != nil) != a.Fixed || a.Fixed != (a.Engine != "api:unskilled") {
			t.Errorf("attempt %+v (run %v)", a, err)
			continue
		}
		// The attempt carries the run's verifier word: on a pass, the
		// share of its patch's mutants caught; on a failure, none.
		if a.Fixed != (a.Strength != nil) || a.Strength != nil && !reflect.DeepEqual(*a.Strength, *r.Fork[0].Strength) {
			t.Errorf("attempt %s on %s: strength %+v, the run's %+v", a.Engine, a.Task, a.Strength, r.Fork[0].Strength)
			continue
		}
		if a.Strength == nil {
			continue
		}
		t.Logf("%s on %s: %s; survivors %v", a.Engine, a.Task, a.Strength.Summary(""), a.Strength.Survivors)
		// Every mutant of the budget is judged: eval's cap is the
		// attempt's timeout, not one judged run.
		if a.Strength.Judged != min(a.Strength.Mutants, run.DefaultVerify) || a.Strength.Cut != "" {
			t.Errorf("%s on %s: %d of %d mutants judged (%q), want the whole budget", a.Engine, a.Task, a.Strength.Judged, a.Strength.Mutants, a.Strength.Cut)
		}
		untested := 0
		for _, sv := range a.Strength.Survivors {
			if sv.File == "version.go" && sv.Line > strings.Count(fixed, "\n") {
				untested++
			}
		}
		if a.Engine == "api:sloppy" && untested == 0 || a.Engine == "api:skilled" && untested != 0 {
			t.Errorf("%s on %s: %d survivors in the untested functions: %+v", a.Engine, a.Task, untested, a.Strength.Survivors)
		}
	}
	// The same again, with the skilled model alone: the board keeps both.
	o.Engines = entries[1:2]
	o.Tasks = tasks[:1]
	if _, err := eval.RunTasks(ctx, o); err != nil {
		t.Fatal(err)
	}
	all, err := board.Attempts()
	if err != nil {
		t.Fatal(err)
	}
	// bar sits between the strengths of skilled's passes and sloppy's
	// (see below).
	const bar = 0.6
	table := eval.Standings(all, bar)
	var tbl bytes.Buffer
	eval.WriteStandings(&tbl, table, bar)
	t.Logf("\n%s\n%s", progress.String(), tbl.String())
	if len(all) != 7 || len(table) != 3 {
		t.Fatalf("board holds %d attempts, %d engines: want 7 and 3", len(all), len(table))
	}
	by := map[string]eval.Standing{}
	for _, r := range table {
		by[r.Engine] = r
	}
	skilled, sloppy, last := by["api:skilled"], by["api:sloppy"], table[2]
	if skilled.Solved != 3 || skilled.Attempts != 3 || skilled.TasksSolved != 2 || sloppy.Solved != 2 || sloppy.TasksSolved != 2 ||
		last.Engine != "api:unskilled" || last.Solved != 0 || last.Tasks != 2 {
		t.Errorf("ranked wrong:\n%s", tbl.String())
	}
	if skilled.Tokens == 0 || skilled.CostUSD == 0 {
		t.Errorf("tokens or cost missing: %+v", skilled)
	}
	// Strength. The tasks' tests pin most of skilled's lines (2/3 and
	// 6/8 mutants caught: the error message's part number and a boundary
	// of Compare go untested) and few of sloppy's (2/8 and 4/8: nothing
	// calls Between or Bump). At 0.6 none of skilled's passes is weak and
	// both of sloppy's are; a verifier demanding the default 0.8 would
	// have rejected every pass. Unskilled has nothing to measure.
	if skilled.Verified != 3 || skilled.WeakPasses != 0 || skilled.MedianStrength == nil || *skilled.MedianStrength < bar {
		t.Errorf("skilled's strength: %+v\n%s", skilled, tbl.String())
	}
	if sloppy.Verified != 2 || sloppy.WeakPasses != 2 || sloppy.MedianStrength == nil || *sloppy.MedianStrength >= *skilled.MedianStrength {
		t.Errorf("sloppy's strength: %+v\n%s", sloppy, tbl.String())
	}
	if last.Verified != 0 || last.WeakPasses != 0 || last.MedianStrength != nil {
		t.Errorf("unskilled's strength: %+v", last)
	}
	for _, r := range eval.Standings(all, eval.DefaultMinStrength) {
		if r.WeakPasses != r.Verified {
			t.Errorf("%s at %g: %d of %d verified passes weak, want all", r.Engine, eval.DefaultMinStrength, r.WeakPasses, r.Verified)
		}
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(tbl.String(), "\n")[1:] {
		if f := strings.Fields(l); len(f) > 5 {
			rows[f[1]] = f
		}
	}
	if f := rows["api:skilled"]; f == nil || f[4] != fmt.Sprintf("%.2f", *skilled.MedianStrength) || f[5] != "0/3" {
		t.Errorf("skilled's row: %q", f)
	}
	if f := rows["api:sloppy"]; f == nil || f[4] != fmt.Sprintf("%.2f", *sloppy.MedianStrength) || f[5] != "2/2" {
		t.Errorf("sloppy's row: %q", f)
	}
	if f := rows["api:unskilled"]; f == nil || f[4] != "-" || f[5] != "0/0" {
		t.Errorf("unskilled's row: %q", f)
	}
	if matches, _ := filepath.Glob(filepath.Join(ls.Dir, "eval", ".board-*")); len(matches) != 0 {
		t.Errorf("temp files left beside the board: %v", matches)
	}
	if _, err := os.Stat(board.Path); err != nil {
		t.Error(err)
	}
}
