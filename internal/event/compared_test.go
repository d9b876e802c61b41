package event

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestComparedLines: the comparison as a person reads it, one line each —
// a disagreement with the test's place, a package that does not build with
// the other fork's tests, a survivor the other's tests catch, one only a
// fork has, a note — and a heading that says when nothing differs.
func TestComparedLines(t *testing.T) {
	t.Parallel()
	s := Survivor{File: "grade.go", Line: 5, Operator: "CONDITIONALS_BOUNDARY", Original: ">=", Replacement: ">"}
	d := ComparedData{
		Forks: []int{3, 1},
		Disagreements: []Disagreement{
			{Tests: 1, Fails: 3, Test: "grade.TestX", File: "grade_test.go", Line: 12},
			{Tests: 3, Fails: 1, Test: "grade (package)", Build: true},
		},
		Pinned:   []CrossSurvivor{{Fork: 1, Survivor: s, CaughtBy: []string{"grade.TestY"}}},
		Unpinned: []CrossSurvivor{{Fork: 3, Survivor: s}},
		Notes:    []string{"fork 3 was not verified: its survivors are unknown"},
	}
	want := []string{
		"compared forks 3 and 1",
		"forks 1 and 3 disagree: fork 3 fails fork 1's grade.TestX (grade_test.go:12); the suite does not cover it",
		"forks 1 and 3 disagree: fork 1's code fails grade (package) with fork 3's tests (it does not build or run with them: their code differs in what those tests call); the suite does not cover it",
		"fork 3's grade.TestY catches fork 1's survivor grade.go:5: >= → > (CONDITIONALS_BOUNDARY); the suite does not",
		"survivor of fork 3 only: grade.go:5: >= → > (CONDITIONALS_BOUNDARY)",
		"note: fork 3 was not verified: its survivors are unknown",
	}
	if got := d.Lines(); !slices.Equal(got, want) {
		t.Errorf("lines\n%q\nwant\n%q", got, want)
	}
	quiet := ComparedData{Forks: []int{0, 2}, Notes: []string{"fork 2 added or changed no test: fork 0's code is judged by no test of fork 2"}}
	if got := quiet.Lines(); len(got) != 2 || got[0] != "compared forks 0 and 2: no difference their tests see" {
		t.Errorf("lines %q", got)
	}
}

// TestComparedLinesPrintable: names a fork chose — its test's name, its files, what its runner
// printed, a note quoting them — reach a terminal escaped, each line one line: no carriage
// return, escape sequence, newline or byte that is not UTF-8 gets through.
func TestComparedLinesPrintable(t *testing.T) {
	t.Parallel()
	evil := "T\x1b[2J\rforks 0 and 1 agree\n\xff"
	s := Survivor{File: evil + ".go", Line: 1, Operator: "NEGATE", Original: "a", Replacement: "b"}
	d := ComparedData{
		Forks:         []int{0, 1},
		Disagreements: []Disagreement{{Tests: 0, Fails: 1, Test: evil, File: evil + "_test.go", Line: 2}},
		Pinned:        []CrossSurvivor{{Fork: 1, Survivor: s, CaughtBy: []string{evil}}},
		Unpinned:      []CrossSurvivor{{Fork: 0, Survivor: s}},
		Notes:         []string{"fork 1's " + evil + " is left out of its tests"},
	}
	lines := append(d.Lines(), s.String(), d.Disagreements[0].String())
	if len(lines) != 7 {
		t.Fatalf("%d lines: %q", len(lines), lines)
	}
	for _, l := range lines[1:] {
		if !utf8.ValidString(l) || strings.ContainsAny(l, "\x1b\r\n") {
			t.Errorf("a line a terminal would obey: %q", l)
		}
		if !strings.Contains(l, `T\x1b[2J\rforks 0 and 1 agree\n`) {
			t.Errorf("the name is not kept, escaped: %q", l)
		}
	}
}

// TestClip: a line cut to its bound never splits a character, whatever
// the width of the characters at the cut, and is never over the bound.
func TestClip(t *testing.T) {
	for _, s := range []string{"abcdefghij", "ééééééé", "日本語の文字列です", "a😀😀😀😀😀", "short"} {
		for max := 4; max <= len(s)+1; max++ {
			got := Clip(s, max)
			if len(got) > max || !utf8.ValidString(got) {
				t.Errorf("Clip(%q, %d) = %q: over the bound or not UTF-8", s, max, got)
			}
			if len(s) <= max && got != s {
				t.Errorf("Clip(%q, %d) = %q, want it whole", s, max, got)
			}
			if len(s) > max && (!strings.HasSuffix(got, "...") || !strings.HasPrefix(s, strings.TrimSuffix(got, "..."))) {
				t.Errorf("Clip(%q, %d) = %q, want a prefix of it and ...", s, max, got)
			}
		}
	}
}
