package cli

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/forkbomb/forkbomb/internal/record"
	"github.com/forkbomb/forkbomb/internal/run"
)

// verifyValue is --verify: auto (run.DefaultVerify mutants), off (0), or
// a number of mutants; checked when the flags are parsed.
type verifyValue struct{ p *int }

func (v verifyValue) Set(s string) error {
	switch s {
	case "auto":
		*v.p = run.DefaultVerify
		return nil
	case "off":
		*v.p = 0
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("%q is not auto, off or a number of mutants", s)
	}
	*v.p = n
	return nil
}

func (v verifyValue) String() string {
	switch *v.p {
	case run.DefaultVerify:
		return "auto"
	case 0:
		return "off"
	}
	return strconv.Itoa(*v.p)
}

func (verifyValue) Type() string { return "auto|off|N" }

// addVerifyFlags registers the verifier's flags on run.
func addVerifyFlags(f *pflag.FlagSet, o *run.Options) {
	o.Verify = run.DefaultVerify
	f.Var(verifyValue{&o.Verify}, "verify", fmt.Sprintf("mutants of each passing patch's added lines judged to measure the tests (auto: %d; off: none)", run.DefaultVerify))
	f.DurationVar(&o.VerifyTime, "verify-time", 0, "no mutant of a fork, and no step of comparing passing forks, starts after this (default: one judged run of the fork's patch; none under --min-strength)")
	f.Float64Var(&o.MinStrength, "min-strength", 0, "crown only a fork whose tests catch at least this share (0 to 1) of its patch's mutants")
}

// verifyHelp is run's paragraph on the verifier.
const verifyHelp = `A passing verdict says the tests pass with the patch, not that they would
fail without it. After a fork passes, the verifier mutates the lines its patch
added (Go, Python, JavaScript), judges each mutant like a patch, and reports the
share the tests caught: "verifier: 7/9 mutants of the winning patch caught",
with the survivors. It measures the tests, not the patch (docs/JUDGE.md). It
never delays the first verdict: without --min-strength the winner is crowned
first, and the verifier starts no mutant after --verify-time (by default one
judged run of the winner's patch), so it adds about one round of mutants. With
--min-strength R a passing fork whose share is below R is "unverified: tests
too weak" and never crowned; a run with no other winner ends "unverified".
When two forks pass with different patches (--all, or under --min-strength),
each is judged against the tests the other's patch added or changed, within
the same cap: "forks 0 and 1 disagree: fork 1 fails fork 0's TestX
(x_test.go:12); the suite does not cover it" names a test worth adding.
`

// printStrengths writes the verifier's word on every fork it measured,
// the winner's first.
func printStrengths(w io.Writer, r *record.Run) {
	for _, f := range r.Fork {
		if r.Winner != nil && f.N == *r.Winner {
			printStrength(w, "", f, "the winning patch")
		}
	}
	for _, f := range r.Fork {
		if r.Winner == nil || f.N != *r.Winner {
			printStrength(w, "", f, fmt.Sprintf("fork %d's patch", f.N))
		}
	}
}

// printStrength writes the verifier's word on a fork, each line after
// prefix: the share ("verifier: 7/9 mutants of the winning patch
// caught"), then each survivor.
func printStrength(w io.Writer, prefix string, f record.Fork, whose string) {
	s := f.Strength
	if s == nil {
		return
	}
	fmt.Fprintf(w, "%sverifier: %s", prefix, s.Summary(whose))
	if s.Unverified {
		fmt.Fprintf(w, " — unverified: tests too weak (below --min-strength %g)", s.MinStrength)
	}
	fmt.Fprintln(w)
	for _, sv := range s.Survivors {
		fmt.Fprintf(w, "%s  survivor: %s\n", prefix, sv)
	}
}

// printCompared writes the comparison of passing forks (compare.go of
// internal/run), each pair's heading, then its lines indented, after
// prefix.
func printCompared(w io.Writer, prefix string, r *record.Run) {
	for _, c := range r.Compared {
		for i, l := range c.Lines() {
			if i > 0 {
				l = "  " + l
			}
			fmt.Fprintf(w, "%s%s\n", prefix, l)
		}
	}
}
