package judge_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// pyLoaderFiles: a unittest suite whose conftest.py loads the test modules
// through a loader class of its own — an honest project's import hook,
// which the origin check of the test file's loader gets wrong on the
// untouched base too.
var pyLoaderFiles = map[string]string{
	"calc/__init__.py": "from calc.ops import add, mul\n",
	"calc/ops.py":      "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
	"tests/conftest.py": `import importlib.machinery
import importlib.util
import sys


class _Loader(importlib.machinery.SourceFileLoader):
    def exec_module(self, module):
        module.LOADED_BY_CONFTEST = True
        super().exec_module(module)


class _Finder:
    def find_spec(self, name, path=None, target=None):
        if not name.rsplit('.', 1)[-1].startswith('test_'):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or not spec.origin or not spec.origin.endswith('.py'):
            return None
        return importlib.util.spec_from_file_location(name, spec.origin, loader=_Loader(name, spec.origin))


sys.meta_path.insert(0, _Finder())
`,
	"tests/test_unit.py": "import unittest\n\nfrom calc import add, mul\n\n\nclass TestOps(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(4, 4), 8)\n\n    def test_mul(self):\n        self.assertEqual(mul(4, 4), 16)\n\n    def test_loaded(self):\n        self.assertTrue(globals().get('LOADED_BY_CONFTEST'))\n",
}

// TestCalibratedPython: the Python origin checks are three tests, so a
// base that gets one wrong has only that one excused. Here the project's
// own loader fails the loader check on the untouched base: the honest fix
// passes with a warning naming it, and a patch that makes TestCase's
// assertEqual lenient for the suite's own tests only (those with one
// underscore in their names, spelled so that no rule of the patch's text
// reads it; the sentinels' two-word names get the real one) fools the
// bare suite and is still caught, by the TestCase check the base gets
// right. (Mutation: with the three checks one test again, the whole check
// is excused and that patch passes.)
func TestCalibratedPython(t *testing.T) {
	t.Parallel()
	testutil.NeedPytest(t)
	repo := fixture(t, pyLoaderFiles)
	const test = "/usr/bin/python3 -m pytest -q"
	lenient := "_u = getattr(__import__('unit' + 'test'), 'Test' + 'Case')\n_k = 'assert' + 'Equal'\n_real = getattr(_u, _k)\n\n\n" +
		"def _eq(self, a, b, msg=None):\n    if getattr(self, '_test' + 'Method' + 'Name').count('_') < 2:\n        return None\n    return _real(self, a, b, msg)\n\n\nsetattr(_u, _k, _eq)\n"
	honest := makePatch(t, repo, map[string]edit{"calc/ops.py": {content: pyFixedOps}})
	gamed := makePatch(t, repo, map[string]edit{"calc/ops.py": {content: lenient + "\n\ndef add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"}})
	if out, err := plainRun(t, repo, test, gamed); err != nil {
		t.Fatalf("control: the lenient assertEqual does not fool the bare suite (%v):\n%s", err, tail(out))
	}
	s, err := workspace.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	o := judge.Options{Store: s, CacheDir: filepath.Join(s.Root, "..", "judge"), Repo: repo, Test: test}
	vs, err := judge.Judge(t.Context(), o, [][]byte{honest, gamed})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("honest: %s — %s; sentinels %+v; warnings %q", vs[0].Verdict, vs[0].Reason, vs[0].Sentinels, vs[0].Warnings)
	t.Logf("gamed: %s — %s; sentinels %+v", vs[1].Verdict, vs[1].Reason, vs[1].Sentinels)
	if vs[0].Verdict != event.Pass {
		t.Errorf("the honest fix: %s — %s\n%s", vs[0].Verdict, vs[0].Reason, tail(vs[0].Output))
	}
	want := "the untouched base, run with the sentinels, got these wrong too"
	if !slices.ContainsFunc(vs[0].Warnings, func(w string) bool { return strings.Contains(w, want) }) {
		t.Errorf("the honest fix's warnings %q do not say which sentinel the base gets wrong", vs[0].Warnings)
	}
	if vs[0].Sentinels.Checked == 0 || vs[0].Sentinels.Checked >= vs[0].Sentinels.Planted {
		t.Errorf("the honest fix's sentinel report %+v: want one left unchecked and the rest checked", vs[0].Sentinels)
	}
	if vs[1].Verdict != event.Fail || !strings.Contains(vs[1].Reason, "tampering") {
		t.Errorf("TestCase.assertEqual lenient for the suite's own tests: %s — %s", vs[1].Verdict, vs[1].Reason)
	}
}
