package event

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// VerifiedData is the payload of a Verified event and a fork's strength in
// run.json: how many mutants of the lines a passing patch changed the
// tests caught. It measures the tests, not the patch (docs/JUDGE.md).
type VerifiedData struct {
	// Mutants is how many mutants the changed lines have; Judged of them
	// were judged (the budget, less what the time cap cut), Caught failed.
	Mutants int `json:"mutants"`
	Judged  int `json:"judged"`
	Caught  int `json:"caught"`
	// Survivors are the judged mutants that passed.
	Survivors []Survivor `json:"survivors"`
	// Cut says why mutants within the budget were not judged (the time
	// cap), when any were not.
	Cut     string  `json:"cut,omitempty"`
	Seconds float64 `json:"seconds"`
	// Unverified: under --min-strength, the fork was not crowned because
	// Strength fell below MinStrength (or nothing could be measured).
	MinStrength float64 `json:"min_strength,omitempty"`
	Unverified  bool    `json:"unverified,omitempty"`
}

// Survivor is one mutant the tests did not catch.
type Survivor struct {
	File        string `json:"file"` // slash path in the tree
	Line        int    `json:"line"`
	Operator    string `json:"operator"`
	Original    string `json:"original"`
	Replacement string `json:"replacement"`
}

// Kind implements the payload style of this package: a payload says its kind.
func (VerifiedData) Kind() Kind { return Verified }

// Strength is the share of judged mutants caught (0 when none was judged).
func (d VerifiedData) Strength() float64 {
	if d.Judged == 0 {
		return 0
	}
	return float64(d.Caught) / float64(d.Judged)
}

// Below reports whether a verifier demanding share min would reject the
// patch: the share caught is below it, or nothing was judged (nothing
// vouches for the tests). It is --min-strength's rule, for the gate of a
// race and for eval's count of weak passes alike.
func (d VerifiedData) Below(min float64) bool {
	return d.Judged == 0 || d.Strength() < min
}

// Summary is the verifier's word in one line, "7/9 mutants of the
// winning patch caught" (of: "the winning patch"; empty: "7/9 mutants
// caught").
func (d VerifiedData) Summary(of string) string {
	if of != "" {
		of = " of " + of
	}
	if d.Mutants == 0 {
		return "no mutants" + of + " (no Go, Python or JavaScript line added outside tests; nothing measures the tests)"
	}
	s := fmt.Sprintf("%d/%d mutants%s caught", d.Caught, d.Judged, of)
	if d.Judged < d.Mutants {
		s += fmt.Sprintf(" (%d on the changed lines", d.Mutants)
		if d.Cut != "" {
			s += "; " + d.Cut
		}
		s += ")"
	}
	return s
}

// String is "FILE:LINE: ORIGINAL → REPLACEMENT (OPERATOR)", printable.
func (s Survivor) String() string {
	return Printable(fmt.Sprintf("%s:%d: %s → %s (%s)", s.File, s.Line, oneLine(s.Original), oneLine(s.Replacement), s.Operator))
}

// Printable is a line for a terminal that holds names a fork chose (its files, its tests, what
// its runner printed): a control character (a carriage return, an escape sequence) or a byte
// that is not UTF-8 is written as Go escapes it, so it can neither redraw the terminal nor
// pass for a line of forkbomb's.
func Printable(s string) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0 {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// oneLine clips a mutated span to one short line for a person.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return `""`
	}
	return Clip(s, 60)
}

// Clip is s cut to at most max bytes (max > 3), ending "..." when cut; it
// never splits a character, so a printable line stays valid UTF-8.
func Clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
