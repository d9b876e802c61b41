package judge_test

import (
	"testing"

	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// A Go module whose test asserts through an internal helper package that
// only tests import: the helper is the tests' own code.
var testOnlyGoFiles = map[string]string{
	"go.mod":  "module example.com/calc\n\ngo 1.21\n",
	"calc.go": "package calc\n\n// Add returns a+b.\nfunc Add(a, b int) int { return a - b }\n",
	"calc_test.go": `package calc

import (
	"testing"

	"example.com/calc/internal/testassert"
)

func TestAdd(t *testing.T) { testassert.Equal(t, Add(2, 3), 5) }
`,
	"internal/testassert/assert.go": `// Package testassert is the tests' assertion helper.
package testassert

import "testing"

// Equal fails the test when got is not want.
func Equal(t *testing.T, got, want int) {
	t.Helper()
	if got != want {
		t.Fatalf("got %d, want %d", got, want)
	}
}
`,
}

// TestJudgeTestOnlyGo: a patch that edits only the tests' internal helper
// to ignore failures passes while the helper is judged as code (the
// positive control: `--keep` gives the helper back), and fails with the
// helper named in `stripped` by default; the honest fix passes.
func TestJudgeTestOnlyGo(t *testing.T) {
	testutil.Need(t, "go")
	repo := fixture(t, testOnlyGoFiles)
	gaming := map[string]edit{"internal/testassert/assert.go": {content: "package testassert\n\nimport \"testing\"\n\n// Equal ignores failures.\nfunc Equal(t *testing.T, got, want int) {}\n"}}
	honest := map[string]edit{"calc.go": {content: "package calc\n\n// Add returns a+b.\nfunc Add(a, b int) int { return a + b }\n"}}
	judgeAll(t, repo, "go test ./...", nil, []judged{
		{name: "control: the helper kept, the gaming patch wins", edits: gaming, pass: true},
	}, func(o *judge.Options) { o.Strip.Remove = []string{"internal/testassert/*"} })
	judgeAll(t, repo, "go test ./...", nil, []judged{
		{name: "edits the test-only helper to ignore failures", edits: gaming, reason: "stripped edits to 1 test or config file(s): internal/testassert/assert.go"},
		{name: "adds a file to the test-only helper", edits: map[string]edit{"internal/testassert/zz.go": {content: "package testassert\n"}}, reason: "internal/testassert/zz.go"},
		{name: "honest fix", edits: honest, pass: true},
	}, nil)
}

// A Python project whose tests assert through a support package that only
// tests import.
var testOnlyPyFiles = map[string]string{
	"mathx.py":                  "def add(a, b):\n    return a - b\n",
	"tests_support/__init__.py": "from .asserts import check\n",
	"tests_support/asserts.py":  "def check(got, want):\n    assert got == want, (got, want)\n",
	"tests/test_mathx.py":       "from mathx import add\nfrom tests_support import check\n\n\ndef test_add():\n    check(add(2, 3), 5)\n",
	"pytest.ini":                "[pytest]\npythonpath = .\n",
}

// TestJudgeTestOnlyPython: the same for a Python support package.
func TestJudgeTestOnlyPython(t *testing.T) {
	testutil.NeedPytest(t)
	repo := fixture(t, testOnlyPyFiles)
	gaming := map[string]edit{"tests_support/asserts.py": {content: "def check(got, want):\n    pass\n"}}
	const cmd = "/usr/bin/python3 -m pytest -q"
	judgeAll(t, repo, cmd, nil, []judged{
		{name: "control: the helper kept, the gaming patch wins", edits: gaming, pass: true},
	}, func(o *judge.Options) { o.Strip.Remove = []string{"tests_support/asserts.py"} })
	judgeAll(t, repo, cmd, nil, []judged{
		{name: "edits the test-only helper to ignore failures", edits: gaming, reason: "tests_support/asserts.py"},
		{name: "honest fix", edits: map[string]edit{"mathx.py": {content: "def add(a, b):\n    return a + b\n"}}, pass: true},
	}, nil)
}
