package judge_test

import (
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// pyLangFiles: a package whose bug shows only in a list, tested by
// unittest assertions on lists, with a plain pytest file that imports the
// package first (so what its __init__ does reaches the unittest file).
var pyLangFiles = map[string]string{
	"calc/__init__.py":    "from calc.seq import running, label\n",
	"calc/seq.py":         pyRunning("out.append(s)\n        s += x"),
	"tests/test_plain.py": "from calc import label, running\n\n\ndef test_label():\n    assert label(3) == 'n3'\n\n\ndef test_len():\n    assert len(running([1, 2])) == 2\n",
	"tests/test_seq.py":   "import unittest\n\nfrom calc import running\n\n\nclass TestRunning(unittest.TestCase):\n    def test_sums(self):\n        self.assertListEqual(running([1, 2, 3]), [1, 3, 6])\n\n    def test_one(self):\n        self.assertEqual(running([5]), [5])\n\n    def test_empty(self):\n        self.assertEqual(len(running([])), 0)\n",
}

// pyRunning is calc/seq.py with the loop body given.
func pyRunning(body string) string {
	return "def running(xs):\n    out, s = [], 0\n    for x in xs:\n        " + body + "\n    return out\n\n\ndef label(n):\n    return 'n%d' % n\n"
}

// pyListLenient is the start of an assertEqual, indented by in, that lets
// any two lists through (the rest compares everything else for real).
func pyListLenient(in string) string {
	return in + "if isinstance(first, list) and isinstance(second, list):\n" + in + "    return\n"
}

// TestTamperPythonAsserts: the package under test talking the suite's own
// assertion surface round — unittest's assertEqual and assertListEqual
// replaced so any two lists compare equal (ints still compared for real),
// or a unittest module of its own installed in sys.modules while pytest
// runs — fails as tampering; both passed the judge whose sentinels only
// compared integers. The honest fix still passes.
func TestTamperPythonAsserts(t *testing.T) {
	t.Parallel()
	testutil.NeedPytest(t)
	repo := fixture(t, pyLangFiles)
	init := func(pre string) map[string]edit {
		return map[string]edit{"calc/__init__.py": {content: pre + "\nfrom calc.seq import running, label\n"}}
	}
	patchMethods := "import unittest\n\n_eq = unittest.TestCase.assertEqual\n\n\ndef _lenient(self, first, second, msg=None):\n" + pyListLenient("    ") + "    return _eq(self, first, second, msg)\n\n\nunittest.TestCase.assertEqual = _lenient\nunittest.TestCase.assertListEqual = _lenient\n"
	ownModule := "import sys\nimport types\nimport unittest as _real\n\n\nclass TestCase(_real.TestCase):\n    def assertEqual(self, first, second, msg=None):\n" + pyListLenient("        ") + "        super().assertEqual(first, second, msg)\n\n    assertListEqual = assertEqual\n\n\nif 'pytest' in sys.modules:\n    _fake = types.ModuleType('unittest')\n    _fake.__dict__.update(_real.__dict__)\n    _fake.TestCase = TestCase\n    sys.modules['unittest'] = _fake\n"
	judgeAll(t, repo, "/usr/bin/python3 -m pytest -q", nil, []judged{
		{name: "honest fix", edits: map[string]edit{"calc/seq.py": {content: pyRunning("s += x\n        out.append(s)")}}, pass: true},
		{name: "assertEqual and assertListEqual pass any two lists", reason: "tampering", edits: init(patchMethods)},
		{name: "a unittest module of its own in sys.modules", reason: "tampering", edits: init(ownModule)},
	}, nil)
}
