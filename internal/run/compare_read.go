package run

import (
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/forkbomb/forkbomb/internal/judge"
)

// How the comparison of passing forks (compare.go) reads a judged run:
// by the runner's names of its tests, and where a fork's test files
// declare them.

// testsOf are a verdict's tests by name, or why it has none the
// comparison can read: a patch that did not apply, a run stopped or
// talked round, output that names no test.
func testsOf(v *judge.Verdict) (map[string]judge.Outcome, string) {
	switch {
	case v == nil:
		return nil, "not judged"
	case !v.Applied, v.TimedOut, v.Limit != "", v.Tampered:
		return nil, v.Reason
	case v.Results == nil || !v.Results.Named:
		return nil, "the test output names no test (forks are compared test by test)"
	}
	return v.Results.Tests, ""
}

// failing are the tests that failed, sorted.
func failing(tests map[string]judge.Outcome) []string {
	var out []string
	for name, o := range tests {
		if o == judge.Failed {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// lost are the tests that passed in before and fail, or do not run, in
// after (a skip is no failure), sorted. A Go package entry ("pkg
// (package)") that failed with none of its tests failing — they did not
// run: the package does not build with those tests — is one of builds,
// in place of its tests; a test whose subtest failed is named by the
// subtest.
func lost(before, after map[string]judge.Outcome) (tests, builds []string) {
	var gone []string
	for name, o := range before {
		if o != judge.Passed {
			continue
		}
		if now, ok := after[name]; ok && now != judge.Failed {
			continue
		}
		gone = append(gone, name)
	}
	sort.Strings(gone)
	var pkgs []string
	for _, name := range gone {
		if p, ok := strings.CutSuffix(name, " (package)"); ok {
			pkgs = append(pkgs, p)
		}
	}
	inPkg := func(t, p string) bool { return strings.HasPrefix(t, p+".") }
	for _, t := range gone {
		if strings.HasSuffix(t, " (package)") {
			continue
		}
		_, ran := after[t]
		if !ran && slices.ContainsFunc(pkgs, func(p string) bool { return inPkg(t, p) }) {
			continue // its package did not build: the package says it
		}
		if slices.ContainsFunc(gone, func(u string) bool { return strings.HasPrefix(u, t+"/") }) {
			continue // a subtest says more
		}
		tests = append(tests, t)
	}
	for _, p := range pkgs {
		if !slices.ContainsFunc(tests, func(t string) bool { return inPkg(t, p) }) {
			builds = append(builds, p+" (package)")
		}
	}
	return tests, builds
}

// goTest is a Go test's function in the judge's name for it,
// "pkg.TestX/subtest".
var goTest = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\.((?:Test|Example|Fuzz)\w*)(?:/|$)`) })

// testLeaf is the name a test is declared by, from the judge's name for
// it: pytest's "t.py::C::test_x[1]" → test_x, Go's "pkg.TestX/sub" →
// TestX, a TAP or mocha "suite > title" → title.
func testLeaf(name string) string {
	if i := strings.LastIndex(name, "::"); i >= 0 {
		leaf, _, _ := strings.Cut(name[i+2:], "[")
		return leaf
	}
	if m := goTest().FindStringSubmatch(name); m != nil {
		return m[1]
	}
	if i := strings.LastIndex(name, " > "); i >= 0 {
		return name[i+3:]
	}
	return name
}

// locate finds where a test is declared in a fork's test files: the first
// line, in path order, holding Go's "func NAME(", Python's "def NAME(", or
// NAME as a string literal (JavaScript's test titles). It reads text only,
// to show a person where to look.
func locate(files map[string]keptFile, test string) (string, int) {
	leaf := testLeaf(test)
	if leaf == "" {
		return "", 0
	}
	pats := []string{"func " + leaf + "(", "def " + leaf + "(", `"` + leaf + `"`, `'` + leaf + `'`, "`" + leaf + "`"}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		for i, line := range strings.Split(string(files[p].data), "\n") {
			for _, pat := range pats {
				if strings.Contains(line, pat) {
					return p, i + 1
				}
			}
		}
	}
	return "", 0
}
