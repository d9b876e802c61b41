package judge

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// merge returns base with more files laid over it.
func merge(base map[string]string, more map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// goTree: a module whose calc tests use an internal assertion package.
var goTree = map[string]string{
	"go.mod":                        "module example.com/m\n\ngo 1.21\n",
	"calc.go":                       "package calc\n\nfunc Add(a, b int) int { return a - b }\n",
	"calc_test.go":                  "package calc\n\nimport (\n\t\"testing\"\n\n\t\"example.com/m/internal/testassert\"\n)\n\nfunc TestAdd(t *testing.T) { testassert.Equal(t, Add(2, 3), 5) }\n",
	"internal/testassert/eq.go":     "package testassert\n\nimport \"testing\"\n\nfunc Equal(t *testing.T, got, want int) {\n\tif got != want {\n\t\tt.Fatalf(\"got %d, want %d\", got, want)\n\t}\n}\n",
	"internal/testassert/x_test.go": "package testassert\n",
}

// TestTestOnlyGo: which Go packages the import graph calls test-only.
func TestTestOnlyGo(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"internal harness imported only by _test.go files", goTree, []string{"/internal/testassert/*"}},
		{"the same package imported by a non-test file too", merge(goTree, map[string]string{
			"cmd/tool/main.go": "package main\n\nimport _ \"example.com/m/internal/testassert\"\n\nfunc main() {}\n",
		}), nil},
		{"a public package imported only by tests (go-cmp's cmp/cmpopts)", merge(goTree, map[string]string{
			"internal/testassert/eq.go": "package testassert\n",
			"cmpopts/opts.go":           "package cmpopts\n\nfunc Margin() float64 { return 0 }\n",
			"calc_test.go":              "package calc\n\nimport (\n\t\"testing\"\n\n\t\"example.com/m/cmpopts\"\n)\n\nfunc TestM(t *testing.T) { _ = cmpopts.Margin() }\n",
		}), nil},
		{"a public package named as a test helper", merge(goTree, map[string]string{
			"calctest/fake.go": "package calctest\n\nfunc Fake() int { return 5 }\n",
			"calc_test.go":     "package calc\n\nimport (\n\t\"testing\"\n\n\t\"example.com/m/calctest\"\n)\n\nfunc TestF(t *testing.T) { _ = calctest.Fake() }\n",
		}), []string{"/calctest/*"}},
		{"a public package whose name is an English word ending in test", merge(goTree, map[string]string{
			"latest/v.go":  "package latest\n\nfunc V() int { return 5 }\n",
			"calc_test.go": "package calc\n\nimport (\n\t\"testing\"\n\n\t\"example.com/m/latest\"\n)\n\nfunc TestV(t *testing.T) { _ = latest.V() }\n",
		}), nil},
		{"transitively: a package only the harness imports", merge(goTree, map[string]string{
			"internal/testassert/eq.go": "package testassert\n\nimport \"example.com/m/internal/diffx\"\n\nvar _ = diffx.Diff\n",
			"internal/diffx/diff.go":    "package diffx\n\nfunc Diff() {}\n",
		}), []string{"/internal/diffx/*", "/internal/testassert/*"}},
		{"an internal package only its own tests import is code under test", map[string]string{
			"go.mod":                     "module example.com/m\n",
			"internal/calc/calc.go":      "package calc\n\nfunc Add(a, b int) int { return a - b }\n",
			"internal/calc/calc_test.go": "package calc_test\n\nimport (\n\t\"testing\"\n\n\t\"example.com/m/internal/calc\"\n)\n\nfunc TestAdd(t *testing.T) { _ = calc.Add(1, 2) }\n",
		}, nil},
		{"an internal package nothing imports", merge(goTree, map[string]string{"internal/unused/u.go": "package unused\n"}), []string{"/internal/testassert/*"}},
		{"a command under internal/", merge(goTree, map[string]string{"internal/gen/main.go": "package main\n\nfunc main() {}\n"}), []string{"/internal/testassert/*"}},
		{"a nested module's harness", merge(goTree, map[string]string{
			"sub/go.mod":           "module example.com/sub\n",
			"sub/s.go":             "package sub\n",
			"sub/s_test.go":        "package sub\n\nimport _ \"example.com/sub/internal/th\"\n",
			"sub/internal/th/a.go": "package th\n",
		}), []string{"/internal/testassert/*", "/sub/internal/th/*"}},
		{"an importer in a stripped folder (e2e/) is test side", merge(goTree, map[string]string{
			"e2e/run.go": "package e2e\n\nimport _ \"example.com/m/internal/testassert\"\n",
		}), []string{"/internal/testassert/*"}},
		{"a non-test file whose imports do not parse but name the package", merge(goTree, map[string]string{
			"broken.go": "package calc\n\nimport (\n\t\"example.com/m/internal/testassert\"\n\t+++\n)\n",
		}), nil},
		{"a non-test file in an ignored folder does not count", merge(goTree, map[string]string{
			"_old/x.go": "package old\n\nimport _ \"example.com/m/internal/testassert\"\n",
		}), []string{"/internal/testassert/*"}},
		{"no go.mod", map[string]string{"a_test.go": "package a\n\nimport _ \"x/internal/h\"\n", "internal/h/h.go": "package h\n"}, nil},
		{"a folder name with glob characters", map[string]string{
			"go.mod":             "module example.com/m\n",
			"a_test.go":          "package a\n\nimport _ \"example.com/m/internal/t[1]\"\n",
			"internal/t[1]/h.go": "package h\n",
		}, []string{`/internal/t\[1\]/*`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := testOnlyPatterns(writeTree(t, c.files), nil)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// TestTestOnlyStrip: the patterns strip the package's files, new ones
// included, and nothing beside them; --keep gives one back.
func TestTestOnlyStrip(t *testing.T) {
	t.Parallel()
	tree := writeTree(t, merge(goTree, map[string]string{"internal/t[1]/h.go": "package h\n", "t1_test.go": "package calc\n\nimport _ \"example.com/m/internal/t[1]\"\n"}))
	o := StripOptions{Add: testOnlyPatterns(tree, nil)}
	pats := o.patterns()
	for _, p := range []string{"internal/testassert/eq.go", "internal/testassert/new.go", "internal/testassert/expected.json", "Internal/TestAssert/eq.go", "internal/t[1]/h.go"} {
		if !o.isStripped(p, pats) {
			t.Errorf("%q is not stripped", p)
		}
	}
	for _, p := range []string{"calc.go", "internal/testassert/sub/x.go", "internal/testassertx/a.go", "internal/t1/h.go", "internal/testassert"} {
		if o.isStripped(p, pats) {
			t.Errorf("%q is stripped", p)
		}
	}
	for _, keep := range []string{"/internal/testassert/*", "internal/TestAssert/*"} {
		if got := testOnlyPatterns(tree, []string{keep}); len(got) != 1 || got[0] != `/internal/t\[1\]/*` {
			t.Errorf("--keep %s: got %q", keep, got)
		}
	}
}

// TestTestOnlyPython: helper-named modules only tests import.
func TestTestOnlyPython(t *testing.T) {
	t.Parallel()
	base := map[string]string{
		"calc.py":            "def add(a, b):\n    return a - b\n",
		"testing.py":         "def check(a, b):\n    assert a == b\n",
		"tests/test_calc.py": "from calc import add\nfrom testing import check\n\ndef test_add():\n    check(add(2, 3), 5)\n",
	}
	for _, c := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"testing.py only tests import; calc.py, only tests import too, has no helper's name", base, []string{"/testing.py"}},
		{"a support package and its modules", merge(base, map[string]string{
			"tests_support/__init__.py": "from .asserts import check\n",
			"tests_support/asserts.py":  "import difflib\n\ndef check(a, b):\n    assert a == b\n",
			"test_more.py":              "from tests_support.asserts import (\n    check,\n)\n",
		}), []string{"/testing.py", "/tests_support/__init__.py", "/tests_support/asserts.py"}},
		{"a package's testing module its __init__ imports", map[string]string{
			"mypkg/__init__.py":     "from . import testing\n",
			"mypkg/testing.py":      "def check(a, b): pass\n",
			"mypkg/tests/test_x.py": "from mypkg.testing import check\n",
		}, nil},
		{"imported inside a function of non-test code", merge(base, map[string]string{
			"app.py": "def run():\n    import testing\n    return testing\n",
		}), nil},
		{"a parenthesised import in non-test code", merge(base, map[string]string{
			"app.py": "from os import path\nfrom . import (\n    calc,  # the code\n    testing,\n)\n",
		}), nil},
		{"named by a computed import in non-test code", merge(base, map[string]string{
			"app.py": "import importlib\nmod = importlib.import_module('testing')\n",
		}), nil},
		{"a relative import from a test two levels down", map[string]string{
			"pkg/__init__.py":          "",
			"pkg/_testing/__init__.py": "def check(): pass\n",
			"pkg/tests/test_a.py":      "from .._testing import check\n",
		}, []string{"/pkg/_testing/__init__.py"}},
		{"toolz: the honest fix's module is kept", map[string]string{
			"toolz/__init__.py":             "from .itertoolz import *\nfrom . import curried\n",
			"toolz/itertoolz.py":            "def frequencies(seq):\n    return {}\n",
			"toolz/curried/__init__.py":     "import toolz\n",
			"toolz/tests/test_itertoolz.py": "from toolz.itertoolz import frequencies\n",
			"toolz/utils.py":                "def raises(err, lamda): pass\n",
			"toolz/tests/test_utils.py":     "from toolz.utils import raises\n",
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := testOnlyPatterns(writeTree(t, c.files), nil)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// TestTestOnlyNode: helper-named modules only tests require or import.
func TestTestOnlyNode(t *testing.T) {
	t.Parallel()
	base := map[string]string{
		"sum.js":      "module.exports = (a, b) => a - b;\n",
		"testing.js":  "const assert = require('node:assert');\nexports.eq = (a, b) => assert.strictEqual(a, b);\n",
		"sum.test.js": "const sum = require('./sum');\nconst { eq } = require('./testing');\neq(sum(2, 3), 5);\n",
	}
	for _, c := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"testing.js only a test requires; sum.js has no helper's name", base, []string{"/testing.js"}},
		{"an ES module helper imported by a spec", map[string]string{
			"src/testutils.mjs": "export const eq = () => {};\n",
			"src/util.mjs":      "export const x = 1;\n",
			"src/a.spec.mjs":    "import {\n  eq,\n} from './testutils.mjs';\nimport { x } from './util.mjs';\n",
			"src/index.mjs":     "export { x } from './util.mjs';\n",
		}, []string{"/src/testutils.mjs"}},
		{"required by non-test code too", merge(base, map[string]string{"lib/index.js": "module.exports = require('../testing.js');\n"}), nil},
		{"a package.json entry", merge(base, map[string]string{"package.json": `{"name": "x", "main": "testing.js"}`}), nil},
		{"a subpath export", merge(base, map[string]string{"package.json": `{"name": "x", "exports": {"./*": "./*.js"}}`}), nil},
		{"imported through an alias by non-test code", merge(base, map[string]string{"app.js": "import t from '@/testing';\n"}), nil},
		{"a computed require naming it", merge(base, map[string]string{"app.js": "const n = 'testing';\nrequire('./' + n);\n"}), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := testOnlyPatterns(writeTree(t, c.files), nil)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

// TestPyImports: the import statements read from Python text.
func TestPyImports(t *testing.T) {
	t.Parallel()
	abs, rel := pyImports([]byte("import a.b as c, d\nfrom e.f import (g,\n  h as i)  # x\nfrom . import j; import k\nfrom ..l import m\n" +
		"x = 1  # import nope\nfrom the module import it, said he\nif y: import z\n"))
	wantAbs := []string{"a.b", "d", "e.f", "e.f.g", "e.f.h", "k"}
	wantRel := []string{".", ".j", "..l", "..l.m"}
	if !reflect.DeepEqual(abs, wantAbs) || !reflect.DeepEqual(rel, wantRel) {
		t.Errorf("got %q %q, want %q %q", abs, rel, wantAbs, wantRel)
	}
}

// BenchmarkTestOnly: the analysis of Go's own source tree, which Prepare
// would pay once per judge.
func BenchmarkTestOnly(b *testing.B) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skipf("go env GOROOT: %v", err)
	}
	src := filepath.Join(strings.TrimSpace(string(goroot)), "src")
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err != nil {
		b.Skipf("no GOROOT/src: %v", err)
	}
	var got []string
	before := testutil.CPUTime()
	for b.Loop() {
		got = testOnlyPatterns(src, nil)
	}
	// CPU time, which other work on the machine does not inflate
	b.ReportMetric(float64((testutil.CPUTime()-before).Milliseconds())/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(len(got)), "packages")
	b.Logf("%d test-only: %s", len(got), strings.Join(got, " "))
}
