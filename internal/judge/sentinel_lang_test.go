package judge

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// langCase is one test file and what the sentinels appended to it say.
type langCase struct {
	name, file, text string
	want, not        []string // substrings the appended code must / must not hold
}

// plantIn writes files into a fresh tree, plans sentinels for the
// baseline's names, and appends them as the judge would.
func plantIn(t *testing.T, files map[string]string, base *Results, cmd string) (string, *sentinelPlan) {
	t.Helper()
	tree := t.TempDir()
	for p, c := range files {
		os.MkdirAll(filepath.Join(tree, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(tree, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := planSentinels(tree, nil, cmd, &Baseline{Results: base})
	for f, src := range p.files {
		if err := os.WriteFile(filepath.Join(tree, f), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for f, src := range p.appends {
		full := filepath.Join(tree, f)
		old, _ := os.ReadFile(full)
		if err := os.WriteFile(full, append(old, []byte("\n"+src)...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return tree, p
}

// checkOutcomes runs cmd in tree and checks every sentinel came out as it
// must: the generated code is valid and an honest run has no tampering.
func checkOutcomes(t *testing.T, tree string, p *sentinelPlan, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = tree
	// node's processes run the judge's preload, as in a judged run
	pre, err := nodePreloadEnv(t.TempDir())
	if err != nil || pre == "" {
		t.Fatalf("node preload: %q, %v", pre, err)
	}
	cmd.Env = append(os.Environ(), "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1", pre)
	out, _ := cmd.CombinedOutput()
	r := parse(out)
	if r == nil || !r.Named {
		t.Fatalf("no named results:\n%s", out)
	}
	for _, s := range p.list {
		got, ok := r.Tests[s.name]
		if want := map[bool]Outcome{false: Passed, true: Failed}[s.mustFail]; !ok || got != want {
			t.Errorf("%s: %v (ran %v), want %v", s.name, got, ok, want)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

func pytestPlan(t *testing.T, cases []langCase) (string, *sentinelPlan) {
	files := map[string]string{}
	base := &Results{Format: "pytest", Named: true}
	for _, c := range cases {
		files[c.file] = c.text
		base.add(c.file+"::"+c.name, Passed)
	}
	return plantIn(t, files, base, "python3 -m pytest -rA")
}

// TestPlanPytestLanguage: a file of plain functions gets plain asserts on
// every kind of value and the harness-origin check; a file of unittest
// classes also gets a TestCase calling the methods it uses, each on the
// kinds it takes, one failing assertion per must-fail test. Run for real,
// every sentinel comes out as it must.
func TestPlanPytestLanguage(t *testing.T) {
	t.Parallel()
	cases := []langCase{
		{name: "test_plain", file: "tests/test_plain.py", text: "def test_plain():\n    assert [1] == [1]\n",
			want: []string{"assert sorted([", "assert dict([(", " + '-' + str(", "/ 8 == ", "for _ in range(2):", "vars(unittest.case.TestCase)", "co_filename"},
			not:  []string{"class Test", "self.assert"}},
		{name: "TestX::test_lists", file: "test_unit.py", text: "import unittest\n\n\nclass TestX(unittest.TestCase):\n    def test_lists(self):\n        self.assertListEqual([1], [1])\n        self.assertDictEqual({}, {})\n        self.assertAlmostEqual(0.1, 0.1)\n        self.assertIn(1, [1])\n        self.assertEquals(1, 1)\n",
			want: []string{"for _ in range(1):", "(unittest.TestCase):", "self.assertListEqual(sorted(", "self.assertDictEqual(dict(", "self.assertAlmostEqual(", "self.assertIn(", "self.assertEqual(dict([(", "self.assertTrue("},
			not:  []string{"self.assertEquals(", "self.assertRegex("}},
	}
	tree, p := pytestPlan(t, cases)
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			src := p.appends[c.file]
			for _, w := range c.want {
				if !strings.Contains(src, w) {
					t.Errorf("no %q in:\n%s", w, src)
				}
			}
			for _, w := range c.not {
				if strings.Contains(src, w) {
					t.Errorf("%q in:\n%s", w, src)
				}
			}
			// one failing assertion per must-fail test: count them
			fails := 0
			for _, s := range p.list {
				if s.mustFail && strings.HasPrefix(s.name, c.file+"::") {
					fails++
				}
			}
			if min := len(pyPlain); fails < min {
				t.Errorf("%d must-fail sentinels, want at least %d", fails, min)
			}
		})
	}
	t.Run("run", func(t *testing.T) {
		testutil.NeedPytest(t)
		checkOutcomes(t, tree, p, testutil.SystemPython, "-m", "pytest", "-rA", "-p", "no:cacheprovider")
	})
}

// TestPlanNodeLanguage: a file whose tests assert through t.assert gets
// sentinels through t.assert (a must-fail one reading it first) as well as
// through node:assert; a file that imports node:assert gets none through
// t.assert; an ES module checks its imports with import.meta. Run for
// real under node --test, every sentinel comes out as it must.
func TestPlanNodeLanguage(t *testing.T) {
	t.Parallel()
	cases := []langCase{
		{name: "ctx", file: "test/ctx.test.js", text: "const test = require('node:test');\ntest('ctx', (t) => { t.assert.deepStrictEqual([1], [1]); t.assert.equal(1, 1); });\n",
			want: []string{"(t) => { t.assert.deepStrictEqual([", "(t) => { t.assert.equal(", "(t) => { t.assert.ok(", ".strictEqual(", "__filename", "require.resolve(\"node:assert\")", "probe(\"t.assert.deepStrictEqual\""}},
		{name: "plain", file: "test/plain.test.js", text: "const test = require('node:test');\nconst assert = require('node:assert');\ntest('plain', () => { assert.match('a', /a/); });\n",
			want: []string{".match('", "probe(\"node:assert/strict match\""},
			not:  []string{"t.assert"}},
		{name: "esm", file: "test/esm.test.mjs", text: "import test from 'node:test';\nimport assert from 'node:assert/strict';\ntest('esm', () => { assert.deepEqual({}, {}); });\n",
			want: []string{"import.meta.url", "import.meta.resolve(", ".deepEqual(Object.fromEntries("},
			not:  []string{"require("}},
	}
	files := map[string]string{"package.json": `{"scripts": {"test": "node --test"}}`}
	base := &Results{Format: "tap", Named: true}
	for _, c := range cases {
		files[c.file] = c.text
		base.add(c.name, Passed)
	}
	tree, p := plantIn(t, files, base, "npm test")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := p.appends[c.file]
			for _, w := range c.want {
				if !strings.Contains(src, w) {
					t.Errorf("no %q in:\n%s", w, src)
				}
			}
			for _, w := range c.not {
				if strings.Contains(src, w) {
					t.Errorf("%q in:\n%s", w, src)
				}
			}
		})
	}
	t.Run("run", func(t *testing.T) {
		testutil.Need(t, "node")
		checkOutcomes(t, tree, p, "node", "--test")
	})
}

// TestPyTemplatesFill: every value template of the pytest sentinels fills
// to Python without fmt's error marks, whatever arguments it uses.
func TestPyTemplatesFill(t *testing.T) {
	t.Parallel()
	args := []any{int64(63), int64(643), "list", "path"}
	check := func(name string, v pyVal) {
		for _, tmpl := range []string{v.pass, v.fail} {
			if got := pyf(tmpl, args); strings.Contains(got, "%!") {
				t.Errorf("%s: %q fills to %q", name, tmpl, got)
			}
		}
	}
	for m, vs := range pyAsserts {
		for _, v := range vs {
			check(m, v)
		}
	}
	for _, v := range pyPlain {
		check("assert", v)
	}
}

// TestPlanNodeCommands: a quoted name pattern is a flag's value, not a
// test file; a package.json script that selects tests by name (which the
// judge does not read as the command's selection) gets no sentinels,
// rather than sentinels it would deselect and an honest fix failed for.
func TestPlanNodeCommands(t *testing.T) {
	t.Parallel()
	test := "const test = require('node:test');\nconst assert = require('node:assert');\ntest('sum', () => { assert.equal(1, 1); });\n"
	for _, c := range []struct {
		name, cmd, script string
		planted           bool
		note              string
	}{
		{"quoted pattern", "node --test --test-name-pattern='sum|other thing'", "", true, ""},
		{"pattern as its own word", "node --test --test-name-pattern sum", "", true, ""},
		{"a test file named", "node --test test/a.test.js", "", false, "names its test files (test/a.test.js)"},
		{"npm test, plain script", "npm test", "node --test", true, ""},
		{"npm test, script selecting by name", "npm test", "node --test --test-name-pattern=sum", false, "script selects tests by name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			base := &Results{Format: "tap", Named: true}
			base.add("sum", Passed)
			files := map[string]string{"test/a.test.js": test}
			if c.script != "" {
				files["package.json"] = `{"scripts": {"test": "` + c.script + `"}}`
			}
			_, p := plantIn(t, files, base, c.cmd)
			if got := len(p.list) > 0; got != c.planted || !strings.Contains(p.note, c.note) {
				t.Errorf("planted %v (%d), note %q; want planted %v, note with %q", got, len(p.list), p.note, c.planted, c.note)
			}
		})
	}
}

// TestSentinelNamesAcrossFiles: every sentinel's name is fresh across the
// whole plan, not only in its own file: node names its results by the test
// alone, so two files' sentinels of one name read as one (CI once saw a
// must-pass sentinel read as a must-fail one of the same name). Twenty
// files give some 800 names from a space of about 125 000: names fresh per
// file alone collide in most plans.
func TestSentinelNamesAcrossFiles(t *testing.T) {
	t.Parallel()
	files := map[string]string{"package.json": `{"scripts": {"test": "node --test"}}`}
	base := &Results{Format: "tap", Named: true}
	for i := range 20 {
		name := fmt.Sprintf("t%d", i)
		files["test/"+name+".test.js"] = "const test = require('node:test');\nconst assert = require('node:assert');\ntest('" + name + "', () => { assert.equal(1, 1); });\n"
		base.add(name, Passed)
	}
	_, p := plantIn(t, files, base, "npm test")
	seen := map[string]bool{}
	for _, s := range p.list {
		if seen[s.name] {
			t.Errorf("two sentinels named %q", s.name)
		}
		seen[s.name] = true
	}
	if len(seen) < 200 {
		t.Errorf("only %d sentinels planned", len(seen))
	}
}

// TestPyHookSentinel: the sentinel that checks where pytest's hooks came
// from passes where the base's own conftest.py and a plugin module of the
// project (a hook given by assignment) define hooks, and fails where the
// code under test registers a plugin of its own while it is imported, or
// one it wrote to a temporary folder.
func TestPyHookSentinel(t *testing.T) {
	t.Parallel()
	testutil.NeedPytest(t)
	files := map[string]string{
		"conftest.py":         "pytest_plugins = ['helpers.plug']\n\n\ndef pytest_runtest_logreport(report):\n    pass\n",
		"helpers/__init__.py": "",
		"helpers/plug.py":     "def _configure(config):\n    config.addinivalue_line('markers', 'slow: slow')\n\n\npytest_configure = _configure\n",
		"calc/__init__.py":    "",
		"calc/ops.py":         "def add(a, b):\n    return a + b\n",
		"tests/test_ops.py":   "from calc.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
	}
	register := "\nimport gc\n\n\nclass _Seen:\n    @staticmethod\n    def pytest_runtest_logreport(report):\n        pass\n\n\nfor _o in gc.get_objects():\n    if type(_o).__name__ == 'Config' and hasattr(_o, 'pluginmanager'):\n        _o.pluginmanager.register(_Seen, 'seen')\n        break\n"
	tempPlugin := "\nimport gc, os, sys, tempfile\n\n_d = tempfile.mkdtemp()\nwith open(os.path.join(_d, 'seenplug.py'), 'w') as _f:\n    _f.write('def pytest_runtest_logreport(report):\\n    pass\\n')\nsys.path.insert(0, _d)\nimport seenplug\n\nfor _o in gc.get_objects():\n    if type(_o).__name__ == 'Config' and hasattr(_o, 'pluginmanager'):\n        _o.pluginmanager.register(seenplug, 'seen')\n        break\n"
	// a hook the base's plugin module does not define, added to it under a
	// name built at run time (a hostile review's winner: that file was
	// allowed whole)
	addHook := files["helpers/plug.py"] + "\n\ndef _mr(item, call):\n    yield\n\n\n_mr.hookwrapper = True\nglobals()['pyt' + 'est_runtest_makereport'] = _mr\n"
	for _, c := range []struct {
		name      string
		ops, plug string
		caught    bool
	}{
		{"the base's own hooks", files["calc/ops.py"], "", false},
		{"a plugin registered at import", files["calc/ops.py"] + register, "", true},
		{"a plugin written to a temporary folder", files["calc/ops.py"] + tempPlugin, "", true},
		{"a hook added to the project's plugin module", files["calc/ops.py"], addHook, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			base := &Results{Format: "pytest", Named: true}
			base.add("tests/test_ops.py::test_add", Passed)
			tree, p := plantIn(t, files, base, "python3 -m pytest -rA")
			if !strings.Contains(p.appends["tests/test_ops.py"], `allowed = {"conftest.py:pytest_plugins", "conftest.py:pytest_runtest_logreport", "helpers/plug.py:pytest_configure"}`) {
				t.Fatalf("the hooks of the base are not the allowed set:\n%s", p.appends["tests/test_ops.py"])
			}
			if err := os.WriteFile(filepath.Join(tree, "calc", "ops.py"), []byte(c.ops), 0o644); err != nil {
				t.Fatal(err)
			}
			if c.plug != "" {
				if err := os.WriteFile(filepath.Join(tree, "helpers", "plug.py"), []byte(c.plug), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(testutil.SystemPython, "-m", "pytest", "-rA", "-p", "no:cacheprovider")
			cmd.Dir = tree
			cmd.Env = append(os.Environ(), "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1")
			out, _ := cmd.CombinedOutput()
			r := parse(out)
			if r == nil || !r.Named {
				t.Fatalf("no named results:\n%s", out)
			}
			wrong := 0
			for _, s := range p.list {
				if want := map[bool]Outcome{false: Passed, true: Failed}[s.mustFail]; r.Tests[s.name] != want {
					wrong++
				}
			}
			if want := map[bool]int{false: 0, true: 1}[c.caught]; wrong != want {
				t.Errorf("%d sentinels came out wrong, want %d:\n%s", wrong, want, out)
			}
		})
	}
}
