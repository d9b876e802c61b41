package mine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
)

// check judges the commit's gold patch (its whole diff: the judge strips
// the test files, which are laid over the copy as hidden tests) and the
// empty patch Runs times each against the parent with the commit's
// tests. It fills in FailToPass and PassToPass and returns why the commit
// is not a task, or "" when it is one. Its error is the judge's own.
func (m *miner) check(ctx context.Context, c *Commit, hidden string) (string, error) {
	gold, err := m.h.Diff(ctx, c.Parent, c.Commit)
	if err != nil {
		return "", err
	}
	j, err := m.o.Judge(ctx, judge.Options{
		Store: m.o.Store, CacheDir: m.o.CacheDir, Repo: m.top, Rev: c.Parent,
		Test: c.Test, Hidden: []string{hidden}, Timeout: m.o.Timeout, Parallel: m.o.Parallel,
	})
	if errors.Is(err, judge.ErrCannotJudge) {
		return "the judge cannot run the tests on the parent: " + err.Error(), nil
	}
	if err != nil {
		return "", err
	}
	if closer, ok := j.(interface{ Close() }); ok {
		defer closer.Close() // the parent's kept pid 1 is let go
	}
	m.progress("      judging the commit's code and the parent's, %d times each, with the commit's tests\n", Runs)
	patches := make([][]byte, 0, 2*Runs)
	for range Runs {
		patches = append(patches, gold)
	}
	for range Runs {
		patches = append(patches, nil)
	}
	vs, err := j.Judge(ctx, patches)
	if errors.Is(err, judge.ErrCannotJudge) {
		return "the judge cannot run the tests: " + err.Error(), nil
	}
	if err != nil {
		return "", err
	}
	golds, empties := vs[:Runs], vs[Runs:]
	for _, v := range golds {
		for _, w := range v.Warnings {
			if !slices.Contains(c.Warnings, w) {
				c.Warnings = append(c.Warnings, w)
			}
		}
	}
	if b := golds[0].Baseline; b != nil && b.TimedOut {
		return fmt.Sprintf("the tests time out on the parent (--timeout %s)", m.o.Timeout), nil
	}
	passed := 0
	for _, v := range golds {
		if v.Verdict == event.Pass {
			passed++
		}
	}
	switch {
	case passed == 0:
		return goldFails(golds[0], m.o.Timeout.String()), nil
	case passed < Runs:
		return fmt.Sprintf("flaky: with the commit's code the tests passed in %d of %d runs", passed, Runs), nil
	}
	f2p := failToPass(golds[0])
	if len(f2p) == 0 {
		return "no test fails on the parent and passes with the commit", nil
	}
	for i, v := range golds[1:] {
		if got := failToPass(v); !same(got, f2p) {
			return fmt.Sprintf("flaky: run %d of the commit's code fixed %s, run 1 %s", i+2, list(got), list(f2p)), nil
		}
	}
	// A run of the parent "passes" when the judge passes it or any of the
	// tests the commit fixes passes in it.
	parentPassed := 0
	for _, v := range empties {
		if v.TimedOut {
			return fmt.Sprintf("the tests time out on the parent (--timeout %s)", m.o.Timeout), nil
		}
		fixed := v.Verdict == event.Pass
		for _, t := range f2p {
			fixed = fixed || v.Results != nil && v.Results.Tests[t] == judge.Passed
		}
		if fixed {
			parentPassed++
		}
	}
	switch {
	case parentPassed == Runs:
		return "the tests the commit fixes pass on the parent too: the task does not discriminate", nil
	case parentPassed > 0:
		return fmt.Sprintf("flaky: on the parent the tests the commit fixes passed in %d of %d runs", parentPassed, Runs), nil
	}
	c.FailToPass = f2p
	c.PassToPass = passToPass(golds[0])
	return "", nil
}

// failToPass names the tests that pass with v's patch and did not pass at
// its baseline: failed there, or did not run (a test of a function the
// parent lacks does not compile there).
func failToPass(v *judge.Verdict) []string {
	if v.Results == nil || v.Baseline == nil || v.Baseline.Results == nil {
		return nil
	}
	var out []string
	for name, o := range v.Results.Tests {
		if o == judge.Passed && v.Baseline.Results.Tests[name] != judge.Passed && !fileEntry(v.Results, name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// fileEntry: a pytest result named by a file's path alone — the file did
// not collect on the parent (its new tests import what the parent lacks),
// and the judge credits it once it does. Its tests are named in their own
// right; the entry is no test a task lists.
func fileEntry(r *judge.Results, name string) bool {
	return r.Format == "pytest" && !strings.Contains(name, "::")
}

// passToPass counts the tests that passed at the baseline and pass with v.
func passToPass(v *judge.Verdict) int {
	n := 0
	if v.Results == nil || v.Baseline == nil || v.Baseline.Results == nil {
		return 0
	}
	for name, o := range v.Baseline.Results.Tests {
		if o == judge.Passed && v.Results.Tests[name] == judge.Passed {
			n++
		}
	}
	return n
}

// networkSigns are what a test run prints when it needs a network the
// judge's offline sandbox does not have. They only name the reason for a
// skip: the gold patch failed either way.
var networkSigns = []string{
	"network is unreachable", "temporary failure in name resolution", "name or service not known",
	"no such host", "could not resolve host", "getaddrinfo", "enotfound", "eai_again",
	"failed to establish a new connection", "nodename nor servname",
}

// goldFails says why the commit's own code fails its tests.
func goldFails(v *judge.Verdict, timeout string) string {
	if v.TimedOut {
		return "the tests time out with the commit's code (--timeout " + timeout + ")"
	}
	low := strings.ToLower(v.OutputTail)
	for _, s := range networkSigns {
		if strings.Contains(low, s) {
			return "the tests need the network (the judge runs them offline): " + firstLineWith(v.OutputTail, s)
		}
	}
	return "the commit's own code fails the judge: " + v.Reason
}

func firstLineWith(text, sign string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(strings.ToLower(l), sign) {
			return strings.TrimSpace(l)
		}
	}
	return sign
}

func same(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00")
}

func list(n []string) string {
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, ", ")
}
