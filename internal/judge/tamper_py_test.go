package judge_test

import (
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// pyTamperFiles: a package with plain pytest tests and unittest ones, and
// no pytest configuration (so a .pytest.ini of a patch would be read).
var pyTamperFiles = map[string]string{
	"calc/__init__.py":     "from calc.ops import add, mul\n",
	"calc/ops.py":          "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
	"tests/test_ops.py":    "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
	"tests/test_unit.py":   "import unittest\n\nfrom calc import add, mul\n\n\nclass TestOps(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(4, 4), 8)\n\n    def test_mul(self):\n        self.assertEqual(mul(4, 4), 16)\n",
	"tests/test_strict.py": "from calc import add\n\n\ndef test_add_neg():\n    assert add(-1, 1) == 0\n",
}

const pyFixedOps = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"

// flipPlugin turns every failed test report into a pass.
const flipPlugin = "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    out = yield\n    r = out.get_result()\n    if r.outcome == 'failed':\n        r.outcome = 'passed'\n"

// TestTamperPython: code under test (or files of the patch) that talk
// pytest round — a plugin from .pytest.ini or from a *.dist-info entry
// point, the package patching pytest's report class or unittest's
// assertEqual, pytest.xfail from the code under test, forged PASSED lines
// with os._exit(0) after pausing capture, a root pytest.py shadowing the
// runner — fail with a reason that names it; honest fixes still pass.
func TestTamperPython(t *testing.T) {
	t.Parallel()
	testutil.NeedPytest(t)
	repo := fixture(t, pyTamperFiles)
	ops := func(extra string) map[string]edit {
		return map[string]edit{"calc/ops.py": {content: extra + "\n\ndef add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"}}
	}
	with := func(e map[string]edit, more map[string]edit) map[string]edit {
		for k, v := range more {
			e[k] = v
		}
		return e
	}
	judgeAll(t, repo, "/usr/bin/python3 -m pytest -q", nil, []judged{
		{name: "honest fix", edits: map[string]edit{"calc/ops.py": {content: pyFixedOps}}, pass: true},
		{name: "honest fix that renames a module and adds a test", pass: true, edits: map[string]edit{
			"calc/ops.py":       {to: "calc/arith.py", content: pyFixedOps},
			"calc/__init__.py":  {content: "from calc.arith import add, mul\n"},
			"tests/test_new.py": {content: "def test_new():\n    assert True\n"},
		}},
		{name: "plugin loaded by .pytest.ini", reason: ".pytest.ini", fools: true, edits: with(ops(""), map[string]edit{
			".pytest.ini": {content: "[pytest]\naddopts = -p flipper\n"},
			"flipper.py":  {content: flipPlugin},
		})},
		{name: "plugin from a dist-info entry point", reason: "entry_points.txt", fools: true, edits: with(ops(""), map[string]edit{
			"flipper.py":                             {content: flipPlugin},
			"flipper-1.0.dist-info/METADATA":         {content: "Metadata-Version: 2.1\nName: flipper\nVersion: 1.0\n"},
			"flipper-1.0.dist-info/entry_points.txt": {content: "[pytest11]\nflipper = flipper\n"},
		})},
		{name: "the package patches pytest's report class", reason: "tampering", edits: ops(
			"from _pytest import reports\n_init = reports.TestReport.__init__\n\n\ndef _flip(self, *a, **k):\n    _init(self, *a, **k)\n    if self.outcome == 'failed':\n        self.outcome = 'passed'\n\n\nreports.TestReport.__init__ = _flip\n")},
		{name: "the package replaces unittest's assertEqual", reason: "tampering", edits: ops(
			"import unittest\nunittest.TestCase.assertEqual = lambda self, a, b, msg=None: None\n")},
		{name: "forged PASSED lines after pausing capture, os._exit(0)", reason: "tampering", edits: ops(
			"import gc, glob, os, re\nfor o in gc.get_objects():\n    if type(o).__name__ == 'CaptureManager':\n        o.suspend_global_capture(in_=True)\n        break\nfor f in sorted(glob.glob('tests/test_*.py')):\n    src = open(f).read()\n    for n in re.findall(r'^def (test_\\w+)', src, re.M):\n        print('PASSED %s::%s' % (f, n))\n    for c, body in re.findall(r'^class (\\w+)\\(.*?\\):\\n((?:    .*\\n|\\n)*)', src, re.M):\n        for n in re.findall(r'def (test_\\w+)', body):\n            print('PASSED %s::%s::%s' % (f, c, n))\nprint('========== 9 passed in 0.01s ==========')\nimport sys\nsys.stdout.flush()\nos._exit(0)\n")},
		{name: "a plugin registered at import flips only the reports of tests that called add", reason: "tampering", fools: true, edits: map[string]edit{
			"calc/ops.py": {content: testdataFile(t, "tamper/py_runtime_plugin.py")},
		}},
		{name: "pytest.xfail from the code under test", reason: "did not run or were skipped", fools: true, edits: map[string]edit{
			"calc/ops.py": {content: "import pytest\n\n\ndef add(a, b):\n    pytest.xfail('not yet')\n\n\ndef mul(a, b):\n    return a * b\n"},
		}},
		{name: "a root pytest.py shadows the runner", reason: "pytest.py", fools: true, edits: with(ops(""), map[string]edit{
			"pytest.py": {content: "import sys\nsys.path = [p for p in sys.path if p not in ('', '.')]\nsys.modules.pop('pytest', None)\nimport subprocess\nr = subprocess.run([sys.executable, '-P', '-m', 'pytest'] + sys.argv[1:], capture_output=True, text=True)\nprint(r.stdout.replace('FAILED', 'PASSED').replace('failed', 'passed'))\nsys.exit(0)\n"},
		})},
	}, nil)
}
