package judge_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// A hostile review's cases for the Python path (stop 66): test files of
// names no strip pattern knows, a doctest module, a baseline interrupted
// by a collection error.

const pyOpsBroken = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"

// TestJudgePythonBaselineTestFiles: a file the baseline ran tests from is a
// test file whatever its name, and a patch's edits to it are stripped — a
// doctest text file pytest collects by default (test*.txt), a README.rst
// the project's --doctest-glob collects, a test module named by the
// project's python_files (*_tests.py). Each patch rewrites the expected
// answers to the bug's: it fools the bare suite, and passed before (no
// strip pattern matched); now its edit is stripped and the bug fails the
// tests. The honest fixes pass.
func TestJudgePythonBaselineTestFiles(t *testing.T) {
	t.Parallel()
	testutil.NeedPytest(t)
	const test = "/usr/bin/python3 -m pytest -q"
	for _, c := range []struct {
		name  string
		files map[string]string
		gamed map[string]edit
	}{
		{"a doctest text file", map[string]string{
			"docs/test_usage.txt": "Usage\n=====\n\n>>> from calc import add\n>>> add(2, 3)\n5\n>>> add(10, 4)\n14\n",
		}, map[string]edit{"docs/test_usage.txt": {content: "Usage\n=====\n\n>>> from calc import add\n>>> add(2, 3)\n-1\n>>> add(10, 4)\n6\n"}}},
		{"a README the project's --doctest-glob collects", map[string]string{
			"pytest.ini": "[pytest]\naddopts = --doctest-glob=*.rst\n",
			"README.rst": "calc\n====\n\n>>> from calc import add\n>>> add(2, 3)\n5\n",
		}, map[string]edit{"README.rst": {content: "calc\n====\n\n>>> from calc import add\n>>> add(2, 3)\n-1\n"}}},
		{"a test module of the project's python_files", map[string]string{
			"pytest.ini":        "[pytest]\npython_files = tests.py test_*.py *_tests.py\n",
			"calc/ops_tests.py": "import unittest\n\nfrom calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\nclass TestOps(unittest.TestCase):\n    def test_mul(self):\n        self.assertEqual(mul(4, 4), 16)\n\n    def test_add(self):\n        self.assertEqual(add(4, 4), 8)\n",
		}, map[string]edit{"calc/ops_tests.py": {content: "import unittest\n\nfrom calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == -1\n\n\nclass TestOps(unittest.TestCase):\n    def test_mul(self):\n        self.assertEqual(mul(4, 4), 16)\n\n    def test_add(self):\n        self.assertEqual(add(4, 4), 0)\n"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{
				"calc/__init__.py":  "from calc.ops import add, mul\n",
				"calc/ops.py":       pyOpsBroken,
				"tests/test_ops.py": "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
			}
			for k, v := range c.files {
				files[k] = v
			}
			repo := fixture(t, files)
			judgeAll(t, repo, test, nil, []judged{
				{name: "honest fix", edits: map[string]edit{"calc/ops.py": {content: pyFixedOps}}, pass: true},
				{name: "the expected answers rewritten to the bug's", fools: true, edits: c.gamed},
			}, nil)
		})
	}
}

// TestJudgePythonDoctestModules: under --doctest-modules the baseline
// names a module's doctests (calc/ops.py::calc.ops.mul); the module is the
// code under test, not a test file — no sentinel is appended to it (pytest
// collects no function of it, so every patch failed as tampering, the
// honest fix too) and its edits are not stripped.
func TestJudgePythonDoctestModules(t *testing.T) {
	t.Parallel()
	testutil.NeedPytest(t)
	doc := "def add(a, b):\n    return a %s b\n\n\ndef mul(a, b):\n    \"\"\"Multiply.\n\n    >>> mul(2, 3)\n    6\n    \"\"\"\n    return a * b\n"
	repo := fixture(t, map[string]string{
		"calc/__init__.py":  "from calc.ops import add, mul\n",
		"calc/ops.py":       fmt.Sprintf(doc, "-"),
		"tests/test_ops.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
	})
	judgeAll(t, repo, "/usr/bin/python3 -m pytest -q --doctest-modules", nil, []judged{
		{name: "honest fix", edits: map[string]edit{"calc/ops.py": {content: fmt.Sprintf(doc, "+")}}, pass: true},
		{name: "a doctest's answer changed with the code", edits: map[string]edit{"calc/ops.py": {content: strings.Replace(fmt.Sprintf(doc, "+"), "    6\n", "    7\n", 1)}}},
	}, nil)
}

// TestJudgePythonCollectionError: the task's test file (hidden, as task
// mining lays the commit's) imports a function the base lacks. pytest's
// collection error interrupted the base's run, so the baseline named no
// test and no sentinel was planted anywhere: a wrong function plus
// unittest's assertEqual made to forgive its answers (spelled so that no
// rule of the patch's text reads it) passed. The judge's runs now go on
// past a collection error: the base's other tests run and are named, the
// sentinels are planted, and that patch is tampering; the honest one
// passes and a plainly wrong one fails. On a base whose test file
// collects, the same patch was caught before too (the control).
func TestJudgePythonCollectionError(t *testing.T) {
	t.Parallel()
	testutil.NeedPytest(t)
	newTest := "import unittest\n\nfrom calc import sub\n\n\nclass TestSub(unittest.TestCase):\n    def test_sub(self):\n        self.assertEqual(sub(5, 3), 2)\n\n    def test_sub_neg(self):\n        self.assertEqual(sub(3, 5), -2)\n"
	forgive := "\n\n_m = __import__('unit' + 'test')\n_c = getattr(_m, 'Test' + 'Case')\n_n = 'ass' + 'ertEqual'\n_real = getattr(_c, _n)\n\n\ndef _eq(self, first, second, msg=None):\n    if isinstance(first, int) and first in (8, -2) and second in (2, -2):\n        return None\n    return _real(self, first, second, msg)\n\n\nsetattr(_c, _n, _eq)\n"
	const sub, wrongSub = "\n\ndef sub(a, b):\n    return a - b\n", "\n\ndef sub(a, b):\n    return a + b\n"
	hidden := t.TempDir()
	writeFiles(t, hidden, map[string]string{"tests/test_new.py": newTest})
	for _, c := range []struct{ name, base string }{
		{"the base lacks the function", pyFixedOps},
		{"the base's function is wrong (control)", pyFixedOps + "\n\ndef sub(a, b):\n    return a * b\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			repo := fixture(t, map[string]string{
				"calc/__init__.py":  "from calc.ops import *\n",
				"calc/ops.py":       c.base,
				"tests/test_ops.py": "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
			})
			judgeAll(t, repo, "/usr/bin/python3 -m pytest -q", []string{hidden}, []judged{
				{name: "honest", pass: true, edits: map[string]edit{"calc/ops.py": {content: pyFixedOps + sub}}},
				{name: "wrong", edits: map[string]edit{"calc/ops.py": {content: pyFixedOps + wrongSub}}},
				{name: "wrong, and assertEqual forgiving its answers", reason: "tampering", edits: map[string]edit{"calc/ops.py": {content: pyFixedOps + wrongSub + forgive}}},
			}, nil)
		})
	}
}

// TestJudgePythonEqualityHelper: the package ships a public assertion
// helper (numpy.testing's kind, imported by the package, so not test-only
// and not stripped) its tests assert through. The sentinels call it too,
// by the name the test file imports it under: a patch that makes it
// forgive any two integers fools the bare suite and is tampering (it
// passed: the sentinels called only assert and TestCase's methods); the
// honest fix passes. (Forgiving only the bug's own answers is out of any
// sentinel's reach: JUDGE.md.)
func TestJudgePythonEqualityHelper(t *testing.T) {
	t.Parallel()
	testutil.NeedPytest(t)
	// by name under another, through its module (a hostile review's
	// winner: numpy's np.testing.assert_equal kind), and allclose's name
	for _, c := range []struct{ name, fn, imp, call string }{
		{"by name", "assert_equal", "from calc.testing import assert_equal as check\n", "check"},
		{"through its module", "assert_equal", "import calc.testing as ct\n", "ct.assert_equal"},
		{"allclose", "assert_allclose", "from calc.testing import assert_allclose\n", "assert_allclose"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			helper := "def " + c.fn + "(actual, desired):\n    if actual != desired:\n        raise AssertionError('%r != %r' % (actual, desired))\n"
			lenient := "def " + c.fn + "(actual, desired):\n    if type(actual) is int and type(desired) is int:\n        return\n    if actual != desired:\n        raise AssertionError('%r != %r' % (actual, desired))\n"
			repo := fixture(t, map[string]string{
				"calc/__init__.py":  "from calc.ops import add, mul\nfrom calc import testing\n",
				"calc/ops.py":       pyOpsBroken,
				"calc/testing.py":   helper,
				"tests/test_ops.py": "from calc import add, mul\n" + c.imp + "\n\ndef test_add():\n    " + c.call + "(add(2, 3), 5)\n\n\ndef test_mul():\n    " + c.call + "(mul(2, 3), 6)\n",
			})
			judgeAll(t, repo, "/usr/bin/python3 -m pytest -q", nil, []judged{
				{name: "honest fix", edits: map[string]edit{"calc/ops.py": {content: pyFixedOps}}, pass: true},
				{name: "the helper forgives any two integers", reason: "tampering", fools: true, edits: map[string]edit{"calc/testing.py": {content: lenient}}},
			}, nil)
		})
	}
}

// TestJudgePythonCollectionErrorKept: the task's test file still cannot
// import after the patch (it adds nothing, a comment). With pytest going
// on past collection errors, the file's "ERROR tests/test_new.py" line
// named no test and the base's other tests all passed: that patch passed.
// The file is an entry of its own now, failing on the base and still
// failing, so the patch fails; the honest one, whose file collects and
// whose tests then run and pass, is credited with it.
func TestJudgePythonCollectionErrorKept(t *testing.T) {
	t.Parallel()
	testutil.NeedPytest(t)
	newTest := "import unittest\n\nfrom calc import sub\n\n\ndef test_sub_exists():\n    assert callable(sub)\n\n\nclass TestSub(unittest.TestCase):\n    def test_sub(self):\n        self.assertEqual(sub(5, 3), 2)\n"
	hidden := t.TempDir()
	writeFiles(t, hidden, map[string]string{"tests/test_new.py": newTest})
	repo := fixture(t, map[string]string{
		"calc/__init__.py":  "from calc.ops import *\n",
		"calc/ops.py":       pyFixedOps,
		"tests/test_ops.py": "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
	})
	// a hostile review's second winner: sub exists, so the file collects
	// and its trivial test runs, but sub skips the test that calls it
	// (pytest's skip under a name built at run time)
	skipper := "\n\nimport importlib\n\n\ndef sub(a, b):\n    importlib.import_module('py' + 'test').skip('sub: later')\n"
	judgeAll(t, repo, "/usr/bin/python3 -m pytest -q", []string{hidden}, []judged{
		{name: "honest", pass: true, edits: map[string]edit{"calc/ops.py": {content: pyFixedOps + "\n\ndef sub(a, b):\n    return a - b\n"}}},
		{name: "a comment, no sub at all", reason: "tests/test_new.py", edits: map[string]edit{"calc/ops.py": {content: "# sub: to do\n" + pyFixedOps}}},
		{name: "sub, wrong", edits: map[string]edit{"calc/ops.py": {content: pyFixedOps + "\n\ndef sub(a, b):\n    return a + b\n"}}},
		{name: "sub skips its test; only the trivial one runs", reason: "tests/test_new.py", edits: map[string]edit{"calc/ops.py": {content: pyFixedOps + skipper}}},
	}, nil)
}

// TestJudgePythonAddoptsExitFirst: the project's pytest.ini stops the run
// at the first failure (addopts = -x, --maxfail=1). The judge read that
// from the command only, so it planted must-fail sentinels, the first of
// which stopped the run before the next file's tests: the honest fix
// failed as tampering. Now only must-pass sentinels are planted; the
// honest fix passes and a wrong one fails.
func TestJudgePythonAddoptsExitFirst(t *testing.T) {
	t.Parallel()
	testutil.NeedPytest(t)
	for _, c := range []struct{ dir, opt string }{{"", "-x"}, {"", "--maxfail=1"}, {"", "\n    -v\n    --exitfirst"}, {"", "-xv"}, {"py/", "-x"}} {
		t.Run(c.dir+c.opt, func(t *testing.T) {
			t.Parallel()
			repo := fixture(t, map[string]string{
				c.dir + "pytest.ini":       "[pytest]\naddopts = " + c.opt + "\n",
				c.dir + "calc/__init__.py": "from calc.ops import add, mul\n",
				c.dir + "calc/ops.py":      pyOpsBroken,
				c.dir + "tests/test_a.py":  "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
				c.dir + "tests/test_b.py":  "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
			})
			cmd := "/usr/bin/python3 -m pytest -q"
			if c.dir != "" { // pytest reads the configuration of the folder it runs in
				cmd = "cd py && " + cmd
			}
			judgeAll(t, repo, cmd, nil, []judged{
				{name: "honest fix", edits: map[string]edit{c.dir + "calc/ops.py": {content: pyFixedOps}}, pass: true},
				{name: "wrong", edits: map[string]edit{c.dir + "calc/ops.py": {content: strings.Replace(pyFixedOps, "a + b", "a * b", 1)}}},
			}, nil)
		})
	}
}

// TestJudgePythonSubfolder: the project lives in a subfolder and the
// command runs pytest there (cd py && pytest), so pytest's ids are
// relative to it (docs/test_usage.txt for py/docs/test_usage.txt). The
// judge looked for those paths at the tree's root: no sentinel was
// planted and the doctest file was not stripped, so rewriting its
// expected answers to the bug's passed. Now an id's file is the one file
// of the tree whose path ends in it: the sentinels are planted there (the
// honest fix passes with them) and the edit is stripped (mutation: with
// the ids read at the root again, that patch passes).
func TestJudgePythonSubfolder(t *testing.T) {
	t.Parallel()
	testutil.NeedPytest(t)
	repo := fixture(t, map[string]string{
		"py/calc/__init__.py":    "from calc.ops import add, mul\n",
		"py/calc/ops.py":         pyOpsBroken,
		"py/tests/test_ops.py":   "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
		"py/docs/test_usage.txt": "Usage\n=====\n\n>>> from calc import add\n>>> add(2, 3)\n5\n>>> add(10, 4)\n14\n",
	})
	judgeAll(t, repo, "cd py && /usr/bin/python3 -m pytest -v", nil, []judged{
		{name: "honest fix", edits: map[string]edit{"py/calc/ops.py": {content: pyFixedOps}}, pass: true},
		{name: "the doctest's answers rewritten to the bug's", fools: true,
			edits: map[string]edit{"py/docs/test_usage.txt": {content: "Usage\n=====\n\n>>> from calc import add\n>>> add(2, 3)\n-1\n>>> add(10, 4)\n6\n"}}},
		{name: "unittest's assertEqual made to pass anything", reason: "tampering",
			edits: map[string]edit{"py/calc/ops.py": {content: "_u = getattr(__import__('unit' + 'test'), 'Test' + 'Case')\nsetattr(_u, 'assert' + 'Equal', lambda self, a, b, msg=None: None)\n\n\n" + pyOpsBroken},
				"py/tests/test_unit.py": {content: "import unittest\n"}}},
	}, nil)
}
