package event

import (
	"fmt"
	"strings"
)

// ComparedData is the payload of a Compared event and one entry of
// run.json's "compared": two passing forks whose patches differ, each
// judged against the tests the other's patch added or changed. Both pass
// the suite, so a test of one that the other's code fails is a difference
// in behaviour the suite does not see — a test to add, once a person has
// read it (docs/JUDGE.md says what the comparison shows and what not).
type ComparedData struct {
	// Forks are the two forks: the winner (or, without one, the first
	// passing fork) first.
	Forks []int `json:"forks"`
	// Disagreements: tests one fork's patch added or changed that its
	// own code passes and the other fork's code fails.
	Disagreements []Disagreement `json:"disagreements"`
	// Pinned: survivors of one fork's patch (mutants the suite lets pass)
	// that the other fork's tests catch.
	Pinned []CrossSurvivor `json:"pinned"`
	// Unpinned: when neither fork added or changed a test, the survivors
	// each fork's patch has and the other's has not — where the suite
	// pins neither fork's code.
	Unpinned []CrossSurvivor `json:"unpinned,omitempty"`
	// Notes say what was not compared, and why.
	Notes   []string `json:"notes"`
	Seconds float64  `json:"seconds"`
}

// Disagreement is one test of one fork that the other fork's code fails.
type Disagreement struct {
	Tests int `json:"tests"` // the fork whose patch added or changed the test
	Fails int `json:"fails"` // the fork whose code fails it
	// Test is the test as the runner names it; with Build, a package
	// that does not build or run with those tests (Go: "pkg (package)"),
	// no test of it named.
	Test  string `json:"test"`
	Build bool   `json:"build,omitempty"`
	// File and Line: where the test is declared in the tests' fork's
	// files, when the judge's name for it could be found there.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// CrossSurvivor is a survivor of fork Fork's patch; in Pinned, CaughtBy
// are the other fork's tests that fail it.
type CrossSurvivor struct {
	Fork int `json:"fork"`
	Survivor
	CaughtBy []string `json:"caught_by,omitempty"`
}

// Kind implements the payload style of this package: a payload says its kind.
func (ComparedData) Kind() Kind { return Compared }

// Lines are the comparison for a person: a heading, then one line for each
// disagreement, pinned or unpinned survivor and note — each printable.
func (d ComparedData) Lines() []string {
	if len(d.Forks) != 2 {
		return nil
	}
	a, b := d.Forks[0], d.Forks[1]
	head := fmt.Sprintf("compared forks %d and %d", a, b)
	if len(d.Disagreements) == 0 && len(d.Pinned) == 0 && len(d.Unpinned) == 0 {
		head += ": no difference their tests see"
	}
	out := []string{head}
	for _, x := range d.Disagreements {
		out = append(out, x.String())
	}
	for _, x := range d.Pinned {
		out = append(out, fmt.Sprintf("fork %d's %s catches fork %d's survivor %s; the suite does not", d.other(x.Fork), strings.Join(x.CaughtBy, ", "), x.Fork, x.Survivor))
	}
	for _, x := range d.Unpinned {
		out = append(out, fmt.Sprintf("survivor of fork %d only: %s", x.Fork, x.Survivor))
	}
	for _, n := range d.Notes {
		out = append(out, "note: "+n)
	}
	for i, l := range out {
		out[i] = Printable(l)
	}
	return out
}

// other is the fork of the pair that is not n.
func (d ComparedData) other(n int) int {
	if d.Forks[0] == n {
		return d.Forks[1]
	}
	return d.Forks[0]
}

// String is "forks 1 and 3 disagree: fork 3 fails fork 1's TestX
// (x_test.go:12); the suite does not cover it".
func (x Disagreement) String() string {
	what := fmt.Sprintf("fork %d fails fork %d's %s", x.Fails, x.Tests, x.Test)
	if x.Build {
		what = fmt.Sprintf("fork %d's code fails %s with fork %d's tests (it does not build or run with them: their code differs in what those tests call)", x.Fails, x.Test, x.Tests)
	}
	if x.File != "" {
		what += fmt.Sprintf(" (%s:%d)", x.File, x.Line)
	}
	lo, hi := min(x.Tests, x.Fails), max(x.Tests, x.Fails)
	return Printable(fmt.Sprintf("forks %d and %d disagree: %s; the suite does not cover it", lo, hi, what))
}
