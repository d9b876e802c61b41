package judge

import (
	"os"
	"path/filepath"
	"testing"
)

// TestResultFormats reads real runner output (testdata/results, made by
// the tools themselves from the *-source files there: pytest 7.2, mocha
// 11, jest 30, tape 5, node 20's TAP reporter) and checks the counts and
// the outcome of the tests that decide a verdict.
func TestResultFormats(t *testing.T) {
	t.Parallel()
	const p = "test_s.py::"
	cases := []struct {
		file             string
		format           string
		named            bool
		pass, fail, skip int
		tests            map[string]Outcome
	}{
		// XFAIL is not a pass (pytest.xfail() from the code under test
		// must not turn a failing test green); XPASS is: its body passed.
		// Ids with spaces stay whole and distinct.
		{"pytest-rA.txt", "pytest", true, 4, 4, 2, map[string]Outcome{
			p + "test_pass": Passed, p + "test_fail": Failed, p + "test_param[a b]": Passed, p + "test_param[a c]": Failed,
			p + "test_param[d]e - f]": Passed, p + "test_xfail_imperative": Skipped, p + "test_xfail_marked": Skipped,
			p + "test_xpass": Passed, p + "test_xpass_strict": Failed, p + "test_error": Failed}},
		{"pytest-v.txt", "pytest", true, 4, 4, 3, map[string]Outcome{
			p + "test_param[a b]": Passed, p + "test_param[a c]": Failed, p + "test_xfail_imperative": Skipped,
			p + "test_xpass": Passed, p + "test_skip": Skipped, p + "test_error": Failed}},
		{"pytest-v-rA.txt", "pytest", true, 4, 4, 3, map[string]Outcome{
			p + "test_param[a b]": Passed, p + "test_param[a c]": Failed, p + "test_param[d]e - f]": Passed,
			p + "test_xfail_marked": Skipped, p + "test_xpass_strict": Failed}},
		// tape: by test ("# name"), not by assertion message; a test with
		// one failing assertion fails; two tests of one name are one
		{"tape.txt", "tape", true, 1, 1, 1, map[string]Outcome{"sum adds": Passed, "sum subtracts": Failed, "skips": Skipped}},
		// node's TAP: a console line that looks like a tape name changes nothing
		{"node-tap-console.txt", "tap", true, 1, 1, 0, map[string]Outcome{"adds": Passed, "subtracts": Failed}},
		{"mocha-spec.txt", "mocha", true, 4, 1, 1, map[string]Outcome{
			"top level": Passed, "sum > adds": Passed, "sum > adds with spaces [a b]": Passed, "sum > subtracts": Failed,
			"sum > later": Skipped, "sum > nested > deep": Passed}},
		{"jest-one-file.txt", "jest", true, 3, 1, 2, map[string]Outcome{
			"jt/a.test.js > top level": Passed, "jt/a.test.js > sum > adds": Passed, "jt/a.test.js > sum > subtracts": Failed,
			"jt/a.test.js > sum > later": Skipped, "jt/a.test.js > sum > someday": Skipped, "jt/a.test.js > sum > nested > deep": Passed}},
		// several files: jest lists no passing test by name, so counts only
		{"jest-two-files.txt", "jest", false, 4, 1, 2, nil},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			out, err := os.ReadFile(filepath.Join("testdata", "results", c.file))
			if err != nil {
				t.Fatal(err)
			}
			r := parse(out)
			if r == nil {
				t.Fatal("no results")
			}
			if r.Format != c.format || r.Named != c.named || r.Passed != c.pass || r.Failed != c.fail || r.Skipped != c.skip {
				t.Errorf("got %s named=%v %d/%d/%d, want %s named=%v %d/%d/%d\n%v", r.Format, r.Named, r.Passed, r.Failed, r.Skipped,
					c.format, c.named, c.pass, c.fail, c.skip, r.Tests)
			}
			for name, want := range c.tests {
				if got, ok := r.Tests[name]; !ok || got != want {
					t.Errorf("%q: got %q (present %v), want %q", name, got, ok, want)
				}
			}
		})
	}
}

// TestPytestXfailIsNotAPass: a test that passed at baseline and is XFAIL
// now (pytest.xfail() called from the code under test, read with -v) is
// not passing, so the verdict fails; XPASS after a baseline failure is a
// fix.
func TestPytestXfailIsNotAPass(t *testing.T) {
	t.Parallel()
	base := parse([]byte("t.py::test_a PASSED [ 50%]\nt.py::test_b FAILED [100%]\n"))
	for _, c := range []struct {
		name, out, verdict string
	}{
		{"xfail now", "t.py::test_a XFAIL (gamed) [ 50%]\nt.py::test_b PASSED [100%]\n", "fail"},
		{"xpass now", "t.py::test_a PASSED [ 50%]\nt.py::test_b XPASS (known) [100%]\n", "pass"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, reason, _ := decide(base, parse([]byte(c.out)), 0, false, false)
			if string(v) != c.verdict {
				t.Errorf("verdict %s (%s), want %s", v, reason, c.verdict)
			}
		})
	}
}

// TestPytestSkippedUnnamed: skips -rA names by where they were raised, not
// by test, are counted from the summary — its highest count, so a summary
// line the code under test prints after pytest's (a lower count) does not
// hide them.
func TestPytestSkippedUnnamed(t *testing.T) {
	t.Parallel()
	out := "PASSED tests/test_new.py::test_exists\nSKIPPED [1] calc/__init__.py:4: later\n" +
		"==================== 1 passed, 1 skipped in 0.01s ====================\n" +
		"==================== 2 passed in 0.01s ====================\n"
	r := parsePytest([]byte(out))
	if r == nil || r.SkippedUnnamed != 1 {
		t.Fatalf("SkippedUnnamed of %+v, want 1", r)
	}
}
