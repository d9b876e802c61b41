package eval_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/lab/eval"
)

// strength is a verifier's word: caught of judged, of mutants.
func strength(caught, judged, mutants int) *event.VerifiedData {
	return &event.VerifiedData{Mutants: mutants, Judged: judged, Caught: caught, Survivors: []event.Survivor{}}
}

// TestStandingsStrength: the strength columns count only passes the
// verifier measured. A pass below the threshold, or with no mutant to
// judge, is weak (as --min-strength's gate would reject it); one at the
// threshold is not; a failed attempt and a pass with no measure are
// neither. The median is over passes with a mutant judged. A weak pass
// still counts as solved.
func TestStandingsStrength(t *testing.T) {
	as := []eval.Attempt{
		{Engine: "careful", Task: "t1", Fixed: true, Strength: strength(8, 8, 8)},
		{Engine: "careful", Task: "t2", Fixed: true, Strength: strength(4, 5, 9)}, // exactly 0.8: not weak
		{Engine: "careful", Task: "t3", Fixed: false},
		{Engine: "sloppy", Task: "t1", Fixed: true, Strength: strength(2, 8, 12)},
		{Engine: "sloppy", Task: "t2", Fixed: true, Strength: strength(0, 0, 0)}, // nothing measured: weak, not in the median
		{Engine: "sloppy", Task: "t3", Fixed: true, Strength: strength(7, 8, 8)},
		{Engine: "sloppy", Task: "t3", Fixed: true}, // an old board's pass: unmeasured
		{Engine: "lazy", Task: "t1", Fixed: false},
	}
	rows := eval.Standings(as, 0.8)
	by := map[string]eval.Standing{}
	for _, r := range rows {
		by[r.Engine] = r
	}
	for _, c := range []struct {
		engine                 string
		solved, verified, weak int
		median                 float64 // -1: none
	}{
		{"careful", 2, 2, 0, 0.9},
		{"sloppy", 4, 3, 2, (2.0/8 + 7.0/8) / 2},
		{"lazy", 0, 0, 0, -1},
	} {
		r := by[c.engine]
		if r.Solved != c.solved || r.Verified != c.verified || r.WeakPasses != c.weak {
			t.Errorf("%s: solved %d, verified %d, weak %d; want %d, %d, %d", c.engine, r.Solved, r.Verified, r.WeakPasses, c.solved, c.verified, c.weak)
		}
		switch {
		case c.median < 0 && r.MedianStrength != nil:
			t.Errorf("%s: median strength %v, want none", c.engine, *r.MedianStrength)
		case c.median >= 0 && (r.MedianStrength == nil || math.Abs(*r.MedianStrength-c.median) > 1e-9):
			t.Errorf("%s: median strength %v, want %v", c.engine, r.MedianStrength, c.median)
		}
	}
	// A stricter verifier rejects more: at 0.95 careful's 0.8 pass is weak.
	for _, r := range eval.Standings(as, 0.95) {
		if r.Engine == "careful" && r.WeakPasses != 1 {
			t.Errorf("careful at 0.95: %d weak passes, want 1", r.WeakPasses)
		}
	}

	var tbl bytes.Buffer
	eval.WriteStandings(&tbl, rows, 0.8)
	t.Logf("\n%s", tbl.String())
	lines := strings.Split(tbl.String(), "\n")
	if f := strings.Fields(lines[0]); len(f) < 6 || f[4] != "strength" || f[5] != "weak<0.8" {
		t.Errorf("header: %q", lines[0])
	}
	want := map[string][2]string{"careful": {"0.90", "0/2"}, "sloppy": {"0.56", "2/3"}, "lazy": {"-", "0/0"}}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if w, ok := want[f[1]]; !ok || f[4] != w[0] || f[5] != w[1] {
			t.Errorf("row %q: strength and weak columns, want %v", l, w)
		}
		delete(want, f[1])
	}
	if len(want) != 0 {
		t.Errorf("rows missing: %v", want)
	}

	data, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	var back []map[string]any
	json.Unmarshal(data, &back)
	for _, r := range back {
		_, has := r["median_strength"]
		if r["engine"] == "sloppy" && (r["weak_passes"] != 2.0 || r["verified"] != 3.0 || r["median_strength"] != 0.5625) {
			t.Errorf("sloppy as JSON: %v", r)
		}
		if r["engine"] == "lazy" && has {
			t.Errorf("lazy has a median strength in JSON: %v", r)
		}
	}
}

// TestBoardReadsOldAttempts: a board written before attempts held the
// verifier's word (version 1, no "strength") still loads, its passes
// solved but unmeasured; an attempt added now carries its strength, and
// a failed one omits it. The board stays version 1: the field is optional.
func TestBoardReadsOldAttempts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "eval", "board.json")
	os.MkdirAll(filepath.Dir(path), 0o700)
	old := `{
  "version": 1,
  "attempts": [
    {"engine": "api:old", "task": "mined-semver-1", "fixed": true, "verdict": "pass", "run": "r1", "seconds": 3, "turns": 0, "tokens": 10, "cost_usd": 0.1, "at": "2025-01-01T00:00:00Z"}
  ]
}
`
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	b := &eval.Board{Path: path}
	if err := b.Add(eval.Attempt{Engine: "api:new", Task: "mined-semver-1", Fixed: true, Run: "r2", Strength: strength(2, 4, 4)}); err != nil {
		t.Fatal(err)
	}
	if err := b.Add(eval.Attempt{Engine: "api:new", Task: "mined-semver-2", Run: "r3"}); err != nil {
		t.Fatal(err)
	}
	all, err := b.Attempts()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].Strength != nil || all[0].Run != "r1" || all[1].Strength == nil || all[1].Strength.Caught != 2 {
		t.Fatalf("attempts read back: %+v", all)
	}
	for _, r := range eval.Standings(all, 0.8) {
		if r.Engine == "api:old" && (r.Solved != 1 || r.Verified != 0 || r.WeakPasses != 0 || r.MedianStrength != nil) {
			t.Errorf("the old pass: %+v", r)
		}
		if r.Engine == "api:new" && (r.Solved != 1 || r.Verified != 1 || r.WeakPasses != 1) {
			t.Errorf("the new pass: %+v", r)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"version": 1`)) || bytes.Count(data, []byte(`"strength"`)) != 1 {
		t.Errorf("the board on disk: version 1 and one strength (the failed attempt omits it):\n%s", data)
	}
}
