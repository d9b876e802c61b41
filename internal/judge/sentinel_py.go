package judge

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
)

// pytest sentinels are test functions appended to each test file the
// baseline ran — in the same module, so whatever the code under test did
// to pytest or to the assertions it uses (a plugin, a patched report
// class, a replaced TestCase.assertEqual, a unittest of its own in
// sys.modules) reaches them too. They speak the file's language: plain
// `assert` on an int, a str, a list, a dict and a float, and, in a file of
// unittest classes, a TestCase whose methods call the assertion methods
// that file uses on the kinds of value each takes — each must-fail test
// holding one failing assertion, so a comparison made lenient for one kind
// only is caught. One must-pass test checks, inside the test process, that
// unittest, pytest and pluggy were loaded from outside the tree and that
// TestCase's methods are the standard library's own.

var unittestAssertRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`self\.(assert[A-Za-z]+)\(`) })

// pyVal is one value kind: a must-pass and a must-fail expression, given
// to fmt with %[1]d and %[2]d two numbers (b > 2a), %[3]q and %[4]q two
// distinct words.
type pyVal struct{ pass, fail string }

// pyPlain are the plain `assert` sentinels, by kind.
var pyPlain = []pyVal{
	{"%[1]d * 2 == %[1]d + %[1]d", "%[1]d * 2 == %[2]d"},
	{"%[3]q + '-' + str(%[1]d) == '%[3]s-%[1]d'", "%[3]q + '-' + str(%[1]d) == '%[3]s-%[2]d'"},
	{"sorted([%[2]d, %[1]d]) == [%[1]d, %[2]d]", "sorted([%[2]d, %[1]d]) == [%[2]d, %[1]d]"},
	{"dict([(%[3]q, %[1]d)]) == {%[3]q: %[1]d}", "dict([(%[3]q, %[1]d)]) == {%[3]q: %[2]d}"},
	{"%[1]d / 8 == %[1]d * 0.125", "%[1]d / 8 == %[1]d * 0.25"},
}

// pyAsserts are the TestCase methods a sentinel may call, each with the
// kinds of value it takes, as a must-pass and a must-fail call (fmt
// arguments as pyPlain's).
var pyAsserts = map[string][]pyVal{
	"assertEqual": {
		{"self.assertEqual(%[1]d * 2, %[1]d + %[1]d)", "self.assertEqual(%[1]d * 2, %[2]d)"},
		{"self.assertEqual(%[3]q + str(%[1]d), '%[3]s%[1]d')", "self.assertEqual(%[3]q + str(%[1]d), '%[3]s%[2]d')"},
		{"self.assertEqual(sorted([%[2]d, %[1]d]), [%[1]d, %[2]d])", "self.assertEqual(sorted([%[2]d, %[1]d]), [%[2]d, %[1]d])"},
		{"self.assertEqual(dict([(%[3]q, %[1]d)]), {%[3]q: %[1]d})", "self.assertEqual(dict([(%[3]q, %[1]d)]), {%[3]q: %[2]d})"},
		{"self.assertEqual(%[1]d / 8, %[1]d * 0.125)", "self.assertEqual(%[1]d / 8, %[1]d * 0.25)"},
	},
	"assertListEqual":      {{"self.assertListEqual(sorted([%[2]d, %[1]d]), [%[1]d, %[2]d])", "self.assertListEqual(sorted([%[2]d, %[1]d]), [%[2]d, %[1]d])"}},
	"assertDictEqual":      {{"self.assertDictEqual(dict([(%[3]q, %[1]d)]), {%[3]q: %[1]d})", "self.assertDictEqual(dict([(%[3]q, %[1]d)]), {%[4]q: %[1]d})"}},
	"assertTupleEqual":     {{"self.assertTupleEqual(tuple([%[1]d, %[2]d]), (%[1]d, %[2]d))", "self.assertTupleEqual(tuple([%[1]d, %[2]d]), (%[2]d, %[1]d))"}},
	"assertSetEqual":       {{"self.assertSetEqual(set([%[1]d, %[2]d]), {%[2]d, %[1]d})", "self.assertSetEqual(set([%[1]d, %[2]d]), {%[1]d})"}},
	"assertSequenceEqual":  {{"self.assertSequenceEqual([%[1]d, %[2]d], (%[1]d, %[2]d))", "self.assertSequenceEqual([%[1]d, %[2]d], (%[2]d, %[1]d))"}},
	"assertCountEqual":     {{"self.assertCountEqual([%[1]d, %[2]d], [%[2]d, %[1]d])", "self.assertCountEqual([%[1]d, %[2]d], [%[1]d, %[1]d])"}},
	"assertMultiLineEqual": {{"self.assertMultiLineEqual(%[3]q + '\\n', '%[3]s\\n')", "self.assertMultiLineEqual(%[3]q + '\\n', '%[4]s\\n')"}},
	"assertAlmostEqual":    {{"self.assertAlmostEqual(%[1]d / 7, %[1]d / 7 + 1e-9)", "self.assertAlmostEqual(%[1]d / 7, %[1]d / 7 + 0.5)"}},
	"assertNotEqual": {
		{"self.assertNotEqual(%[1]d, %[2]d)", "self.assertNotEqual(%[1]d, %[1]d)"},
		{"self.assertNotEqual(%[3]q, %[4]q)", "self.assertNotEqual(%[3]q, %[3]q)"},
	},
	"assertTrue":    {{"self.assertTrue(%[1]d < %[2]d)", "self.assertTrue(%[2]d < %[1]d)"}},
	"assertFalse":   {{"self.assertFalse(%[2]d < %[1]d)", "self.assertFalse(%[1]d < %[2]d)"}},
	"assertIn":      {{"self.assertIn(%[3]q, [%[4]q, %[3]q])", "self.assertIn(%[3]q, [%[4]q])"}},
	"assertNotIn":   {{"self.assertNotIn(%[3]q, [%[4]q])", "self.assertNotIn(%[3]q, [%[4]q, %[3]q])"}},
	"assertIs":      {{"self.assertIs(None, None)", "self.assertIs([%[1]d], [%[1]d])"}},
	"assertIsNone":  {{"self.assertIsNone(None)", "self.assertIsNone(%[1]d)"}},
	"assertGreater": {{"self.assertGreater(%[2]d, %[1]d)", "self.assertGreater(%[1]d, %[2]d)"}},
	"assertLess":    {{"self.assertLess(%[1]d, %[2]d)", "self.assertLess(%[2]d, %[1]d)"}},
	"assertRaises":  {{"self.assertRaises(ZeroDivisionError, lambda: %[1]d // 0)", "self.assertRaises(ZeroDivisionError, lambda: %[1]d // %[2]d)"}},
	"assertIsInstance": {
		{"self.assertIsInstance([%[1]d], list)", "self.assertIsInstance([%[1]d], dict)"},
	},
	"assertRegex": {{"self.assertRegex('%[3]s%[1]d', '^%[3]s[0-9]+$')", "self.assertRegex('%[3]s%[1]d', '^%[4]s[0-9]+$')"}},
}

// pyAliases are deprecated names the sentinels call by their current one
// (assertEquals is gone from Python 3.12).
var pyAliases = map[string]string{"assertEquals": "assertEqual", "assertItemsEqual": "assertCountEqual", "assertRegexpMatches": "assertRegex"}

// pyRoots computes roots, the tree's root as the test file's compiled
// code and its __file__ each place it (%[1]d folders up): a patch would
// have to fake both. pyOrigin and pyHooks begin with it.
const pyRoots = `    roots = []
    for here in ((lambda: 0).__code__.co_filename, globals().get('__file__') or ''):
        root = os.path.realpath(here)
        for _ in range(%[1]d):
            root = os.path.dirname(root)
        roots.append(root)
`

// pyInside is the origin checks' test of a path under one of dirs.
const pyInside = `    def inside(f, dirs):
        f = os.path.realpath(f)
        return any(f == d or f.startswith(d.rstrip(os.sep) + os.sep) for d in dirs)
`

// pyOrigin are the must-pass test bodies that check where the test
// harness came from, one check each (a base that gets one wrong has only
// that one excused, calibrate.go): the runner's modules, unittest's
// assertions, and the class of the loader this very file names as its own
// (an import hook of the tree's could rewrite a test's asserts as it loads
// it; frozen, builtin and relative code names are not paths of the tree).
// %[1]d is how many folders up the file's own path the tree's root is. The
// file's path is read from its compiled code and from __file__, either of
// which a patch would have to fake.
var pyOrigin = []string{
	// the runner's modules, and unittest the standard library's
	`    import os, sys, sysconfig
    import unittest, unittest.case
` + pyRoots + pyInside + `    for name in ('unittest', 'unittest.case', 'pytest', '_pytest', 'pluggy'):
        mod = sys.modules.get(name)
        if mod is None:
            continue
        where = getattr(mod, '__file__', None)
        assert where, '%%s has no file' %% name
        assert not inside(where, roots), '%%s is loaded from the tree: %%s' %% (name, where)
    case = os.path.realpath(unittest.case.__file__)
    paths = sysconfig.get_paths()
    stdlib = {os.path.realpath(paths[k]) for k in ('stdlib', 'platstdlib') if paths.get(k)}
    assert inside(case, stdlib), 'unittest is not the standard library: %%s' %% case
    assert sys.modules['unittest'] is unittest and unittest.TestCase is unittest.case.TestCase, 'unittest.TestCase is not unittest.case.TestCase'
`,
	// TestCase's assertions are unittest.case's own (it needs no root:
	// the comment takes the root's depth all three are given)
	`    # the tree's root: %[1]d folders up
    import os, sys
    import unittest, unittest.case
` + pyInside + `    case = os.path.realpath(unittest.case.__file__)
    for k, v in list(vars(unittest.case.TestCase).items()):
        code = getattr(getattr(v, '__func__', v), '__code__', None)
        if code is None or not k.startswith(('assert', 'fail', '_')):
            continue
        where = os.path.realpath(code.co_filename)
        # pytest injects its class and method set-up fixtures into every
        # TestCase class it collects (TestCase itself, when a test module
        # imports it by name): those come from pytest's own files, which
        # the first check finds outside the tree.
        if '__pytest_' in k and '_pytest' in sys.modules:
            if inside(where, [os.path.dirname(os.path.realpath(sys.modules['_pytest'].__file__))]):
                continue
        assert where == case, 'TestCase.%%s comes from %%s' %% (k, code.co_filename)
`,
	// the loader of this file is not made in the tree
	`    import os
` + pyRoots + pyInside + `    loader = globals().get('__loader__')
    for k in dir(type(loader)):
        v = getattr(type(loader), k, None)
        code = getattr(getattr(v, '__func__', v), '__code__', None)
        if code is None or not os.path.isabs(code.co_filename):
            continue
        assert not inside(code.co_filename, roots), 'this test file was loaded by %%s, made in the tree: %%s' %% (type(loader).__name__, code.co_filename)
`,
}

// pyHooks is the must-pass test body (its function takes pytest's
// request) that checks where the hooks pytest calls came from: a hook
// whose code is a file of the tree must be one that file defines in the
// base too (conftest.py files, a plugin module of the project's own),
// %[2]s, a Python set of "path:hook" from the root; one made at run time (no
// file) or from a temporary folder (not the interpreter's own: a
// virtualenv may live there) fails. A plugin the code under test
// registers while it is imported — pytest's Config is within reach of any
// module, gc.get_objects() finds it — can rewrite the report of a test
// that called the code under test and spare every sentinel; this shows it.
// %[1]d is as pyOrigin's.
const pyHooks = `    import os, site, sys, sysconfig, tempfile
` + pyRoots + `    allowed = %[2]s
    def under(f, d):
        return f == d or f.startswith(d.rstrip(os.sep) + os.sep)
    temps = {os.path.realpath(d) for d in (tempfile.gettempdir(), '/tmp', '/var/tmp', '/dev/shm')}
    # the interpreter's own folders (a virtualenv made under /tmp is still its own)
    homes = {os.path.realpath(d) for d in (sys.prefix, sys.exec_prefix, sys.base_prefix, *sysconfig.get_paths().values()) if d}
    try:
        homes |= {os.path.realpath(d) for d in site.getsitepackages() + [site.getusersitepackages()]}
    except Exception:
        pass
    relay = request.config.pluginmanager.hook
    for name in dir(relay):
        get = getattr(getattr(relay, name, None), 'get_hookimpls', None)
        if name.startswith('_') or get is None:
            continue
        for impl in get():
            fn = getattr(impl, 'function', None)
            code = getattr(getattr(fn, '__func__', fn), '__code__', None)
            if code is None:
                continue
            assert os.path.isabs(code.co_filename), 'the pytest hook %%s was made at run time (%%s)' %% (name, code.co_filename)
            where = os.path.realpath(code.co_filename)
            for root in roots:
                if under(where, root):
                    rel = os.path.relpath(where, root).replace(os.sep, '/')
                    assert rel + ':' + name in allowed, 'the pytest hook %%s comes from %%s, where the base defines no such hook' %% (name, rel)
                    break
            else:
                assert any(under(where, d) for d in homes) or not any(under(where, d) for d in temps), 'the pytest hook %%s comes from a temporary file: %%s' %% (name, where)
`

// pyOutput is the must-pass test body (its function takes pytest's
// request) that checks pytest will write its report where the judged run's
// output goes: the copy of fd 1 pytest's capture saved, or fd 1 itself
// where pytest does not capture descriptors, must link where the set-up
// shell's fd 1 did. That shell writes it into this body, hex-encoded, in
// place of %[1]s (sentinelPlan.fixWord) — not in the environment, whose
// block in the process's memory the code under test can rewrite (a hostile
// review blinded the first form so, with ctypes). Code under test that
// swapped a spool file in for pytest's saved descriptors, and at exit
// rewrote the spooled report (a failed test that called it made PASSED)
// before writing it out, passed every other check (a hostile review's
// winner: TestJudgePythonOutputRelay). A command that sends pytest's
// output elsewhere (a pipe to tee, a file) fails it on the base too, and
// has it excused (calibrate.go).
const pyOutput = `    import os
    try:
        given = bytes.fromhex('%[1]s').decode('utf-8', 'replace')
    except ValueError:
        return  # planted by no set-up shell (the judge's own unit tests)
    if given == '':
        return
    capman = request.config.pluginmanager.getplugin('capturemanager')
    out = getattr(getattr(capman, '_global_capturing', None), 'out', None)
    fd = getattr(out, 'targetfd_save', 1)
    assert isinstance(fd, int), 'pytest saved no descriptor of its output'
    try:
        got = os.readlink('/proc/self/fd/%%d' %% fd)
    except OSError:
        got = None
    assert got == given, 'pytest will write its report to %%r, not to the %%r this run was given' %% (got, given)
`

// pyHookDefRE finds a file of the base that defines pytest hooks.
var pyHookDefRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\s*(async\s+)?def\s+pytest_\w+\s*\(|\bhookimpl\b|^\s*pytest_\w+\s*=`)
})

// pyHookNameRE finds the hooks a file defines, by name: a function or
// method named pytest_…, or a module attribute so named.
var pyHookNameRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\s*(?:async\s+)?def\s+(pytest_\w+)\s*\(|^\s*(pytest_\w+)\s*=`)
})

// pyHookFiles is the Python set of the hooks the base's files define, each
// "file:hook": a patch that adds a hook to a file that defined others (a
// plugin module conftest.py loads by name, pytest_plugins = [...]) adds
// one the base does not have.
func pyHookFiles(tree string, hidden []string) string {
	var out []string
	for _, f := range listBase(tree, hidden, func(rel string) bool { return strings.HasSuffix(rel, ".py") }, 20000) {
		data, ok := readBase(tree, hidden, f)
		if !ok || !pyHookDefRE().Match(data) {
			continue
		}
		for _, m := range pyHookNameRE().FindAllSubmatch(data, -1) {
			hook := string(m[1]) + string(m[2])
			if q := fmt.Sprintf("%q", f+":"+hook); !slices.Contains(out, q) {
				out = append(out, q)
			}
		}
	}
	if len(out) == 0 {
		return "set()"
	}
	sort.Strings(out)
	return "{" + strings.Join(out, ", ") + "}"
}

func planPytest(tree string, hidden []string, cmd string, base *Results) *sentinelPlan {
	p := &sentinelPlan{runner: "pytest", appends: map[string]string{}}
	for _, cfg := range []string{"pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"} {
		if data, ok := readBase(tree, hidden, cfg); ok && (strings.Contains(string(data), "python_functions") || strings.Contains(string(data), "python_classes")) {
			p.note = "no sentinel tests were placed: " + cfg + " changes which functions pytest collects"
			return p
		}
	}
	mustFail := !failsFast(cmd) && !failsFast(pytestAddopts(tree, hidden, cmd))
	files := map[string]bool{}
	for name := range base.Tests {
		// not a module whose only tests there are its doctests
		// (--doctest-modules): pytest collects no function of it
		if f, doctest := pytestFile(name); strings.HasSuffix(f, ".py") && !doctest {
			files[f] = true
		}
	}
	hooks := pyHookFiles(tree, hidden)
	// the word the set-up replaces, in the output sentinel's source, with
	// what the judged run's fd 1 links to, hex-encoded (pyOutput)
	fdWord := "Q" + randWord(upperAlpha, 15)
	var sorted []string
	for f := range files {
		sorted = append(sorted, f)
	}
	sort.Strings(sorted)
	paths := pytestPaths(tree, hidden, sorted)
	for _, f := range sorted {
		at := paths[f]
		data, ok := readBase(tree, hidden, at)
		if at == "" || !ok {
			continue
		}
		if src := pySentinels(p, f, at, string(data), mustFail, hooks, fdWord); src != "" {
			p.appends[at] = src
			p.fixup = append(p.fixup, at)
		}
	}
	if len(p.fixup) > 0 {
		p.fixWord = fdWord
	}
	if !mustFail {
		p.note = "only must-pass sentinel tests were placed: the command stops at the first failure (-x, --maxfail)"
	}
	return p
}

// pytestAddopts is what the base's pytest configuration adds to every
// command line (addopts, in any of the files pytest reads it from, its
// continuation lines too), each option as a word of its own: "-x" there
// stops the run at the first failure as surely as on the command line.
func pytestAddopts(tree string, hidden []string, cmd string) string {
	var out []string
	// the root's, and those of each folder the command changes into
	// (cd py && pytest reads py/pytest.ini)
	dirs := []string{""}
	if f := strings.Fields(cmd); len(f) > 0 {
		for i := 0; i+1 < len(f); i++ {
			if f[i] == "cd" && !strings.Contains(f[i+1], "..") && !strings.HasPrefix(f[i+1], "/") {
				dirs = append(dirs, strings.Trim(f[i+1], `"'`)+"/")
			}
		}
	}
	var cfgs []string
	for _, d := range dirs {
		for _, cfg := range []string{"pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"} {
			cfgs = append(cfgs, path.Clean(d+cfg))
		}
	}
	for _, cfg := range cfgs {
		data, ok := readBase(tree, hidden, cfg)
		if !ok {
			continue
		}
		in := false
		for _, line := range strings.Split(string(data), "\n") {
			key, val, isKey := strings.Cut(line, "=")
			switch {
			case isKey && strings.TrimSpace(key) == "addopts":
				in = true
				out = append(out, val)
			case in && strings.HasPrefix(line, " ") || in && strings.HasPrefix(line, "\t"):
				out = append(out, line) // a continuation line
			default:
				in = false
			}
		}
	}
	return strings.NewReplacer(`"`, " ", "'", " ", "[", " ", "]", " ", ",", " ").Replace(strings.Join(out, " "))
}

// pytestPaths maps the files pytest's test ids name to paths of the tree.
// An id is relative to the folder pytest ran in (`cd py && pytest` names
// py/tests/test_ops.py tests/test_ops.py): a name the tree has as it is
// stays; another is the one file of the base whose path ends in it (none
// when two do).
func pytestPaths(tree string, hidden []string, names []string) map[string]string {
	out := map[string]string{}
	var lost []string
	for _, n := range names {
		if _, ok := readBase(tree, hidden, n); ok {
			out[n] = n
		} else if !strings.Contains(n, "..") && !strings.HasPrefix(n, "/") {
			lost = append(lost, n)
		}
	}
	if len(lost) == 0 {
		return out
	}
	found := map[string][]string{}
	listBase(tree, hidden, func(rel string) bool {
		hit := false
		for _, n := range lost {
			if strings.HasSuffix(rel, "/"+n) {
				found[n] = append(found[n], rel)
				hit = true
			}
		}
		return hit
	}, 1000)
	for n, at := range found {
		if len(at) == 1 {
			out[n] = at[0]
		}
	}
	return out
}

// pySentinels is the code appended to one test file, its sentinels added
// to p.list: f is the file as pytest names it, at its path in the tree
// (where the origin checks find the tree's root from).
func pySentinels(p *sentinelPlan, f, at, text string, mustFail bool, hooks, fdWord string) string {
	var src strings.Builder
	fresh := func(mk func() string) string {
		n := freshNames(1, text+src.String(), mk)
		if len(n) == 0 {
			return ""
		}
		return n[0]
	}
	fn := func() string { return "test_" + pick(adjectives) + "_" + pick(nouns) }
	words := freshNames(2, "", func() string { return pick(nouns) })
	if len(words) < 2 {
		return ""
	}
	a, b := randInt(3, 90), randInt(200, 900) // b > 2a always: a must-fail "a*2 == b" can never hold
	args := []any{a, b, words[0], words[1]}
	add := func(name, cls string, fail bool, body string) {
		full := f + "::" + name
		if cls != "" {
			full = f + "::" + cls + "::" + name
		}
		p.list = append(p.list, sentinel{name: full, mustFail: fail, scope: f + "::"})
		switch {
		case cls != "":
			fmt.Fprintf(&src, "    def %s(self):\n%s\n", name, body)
		case strings.Contains(body, "request.config"):
			fmt.Fprintf(&src, "\n\ndef %s(request):\n%s", name, body)
		default:
			fmt.Fprintf(&src, "\n\ndef %s():\n%s", name, body)
		}
	}
	for _, body := range pyOrigin {
		if n := fresh(fn); n != "" {
			add(n, "", false, fmt.Sprintf(body, strings.Count(at, "/")+1))
		}
	}
	if n := fresh(fn); n != "" {
		add(n, "", false, fmt.Sprintf(pyHooks, strings.Count(at, "/")+1, hooks))
	}
	if n := fresh(fn); n != "" && fdWord != "" {
		add(n, "", false, fmt.Sprintf(pyOutput, fdWord))
	}
	var all strings.Builder
	for _, v := range pyPlain {
		fmt.Fprintf(&all, "    assert %s\n", pyf(v.pass, args))
	}
	if n := fresh(fn); n != "" {
		add(n, "", false, all.String())
	}
	for _, v := range pyPlain {
		if n := fresh(fn); n != "" && mustFail {
			add(n, "", true, "    assert "+pyf(v.fail, args)+"\n")
		}
	}
	for _, h := range pyEqualHelpers(text) {
		for _, v := range pyHelperVals {
			if n := fresh(fn); n != "" {
				add(n, "", false, "    "+h+"("+pyf(v.pass, args)+")\n")
			}
			if n := fresh(fn); n != "" && mustFail {
				add(n, "", true, "    "+h+"("+pyf(v.fail, args)+")\n")
			}
		}
	}
	if !strings.Contains(text, "TestCase") {
		return src.String()
	}
	cls := fresh(func() string { return "Test" + title(pick(adjectives)) + title(pick(nouns)) })
	if cls == "" {
		return src.String()
	}
	fmt.Fprintf(&src, "\n\nimport unittest\n\n\nclass %s(unittest.TestCase):\n", cls)
	method := func() string { return "test_" + pick(verbs) + "_" + pick(nouns) }
	for _, m := range unittestMethods(text) {
		var pass strings.Builder
		for _, v := range pyAsserts[m] {
			fmt.Fprintf(&pass, "        %s\n", pyf(v.pass, args))
		}
		if n := fresh(method); n != "" {
			add(n, cls, false, pass.String())
		}
		for _, v := range pyAsserts[m] {
			if n := fresh(method); n != "" && mustFail {
				add(n, cls, true, "        "+pyf(v.fail, args)+"\n")
			}
		}
	}
	return src.String()
}

// pyHelperVals are the argument pairs (actual, expected) a sentinel gives
// an equality helper, by kind: a must-pass and a must-fail pair (fmt
// arguments as pyPlain's). One sentinel each, so a helper that does not
// take a kind (a numbers-only one raising on a dict) fails that must-pass
// one on the base too, and has it excused (calibrate.go), not the rest.
var pyHelperVals = []pyVal{
	{"%[1]d * 2, %[1]d + %[1]d", "%[1]d * 2, %[2]d"},
	{"%[3]q + str(%[1]d), '%[3]s%[1]d'", "%[3]q + str(%[1]d), '%[3]s%[2]d'"},
	{"sorted([%[2]d, %[1]d]), [%[1]d, %[2]d]", "sorted([%[2]d, %[1]d]), [%[2]d, %[1]d]"},
	{"dict([(%[3]q, %[1]d)]), {%[3]q: %[1]d}", "dict([(%[3]q, %[1]d)]), {%[3]q: %[2]d}"},
	{"%[1]d / 8, %[1]d * 0.125", "%[1]d / 8, %[1]d * 0.25"},
}

// pyHelperImportRE: a one-line from-import (its names in parentheses or
// not); pyEqualHelperRE: the name of an equality helper (assert_equal,
// assertEquals, assert_array_equal, assert_almost_equal …).
var (
	pyHelperImportRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?m)^from\s+([\w.]+)\s+import\s+\(?([\w\s,]+?)\)?\s*(#.*)?$`)
	})
	// a top-level import of a module, under its own name or another
	pyModImportRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?m)^import\s+([\w.]+)(?:\s+as\s+(\w+))?\s*(#.*)?$`)
	})
	// a star import, and a call of a bare name
	pyStarImportRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^from\s+([\w.]+)\s+import\s+\*\s*(#.*)?$`) })
	pyBareCallRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|[^\w.])([A-Za-z_]\w*)\(`) })
	pyEqualHelperRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^assert_?((almost_?|array_?|array_almost_?)?(equal|equals|eq)|allclose)$`)
	})
)

// pyEqualHelpers are the names under which a test file calls an equality
// helper it imports by name from a module other than unittest's or
// pytest's (whose assertions the other sentinels test): the project's own
// (a public testing module a patch may edit and the test-only analysis
// keeps: numpy.testing's kind), or a library's. Two at most.
func pyEqualHelpers(text string) []string {
	var out []string
	for _, m := range pyHelperImportRE().FindAllStringSubmatch(text, -1) {
		mod := m[1]
		if mod == "unittest" || strings.HasPrefix(mod, "unittest.") || mod == "pytest" || strings.HasPrefix(mod, "_pytest") {
			continue
		}
		for _, part := range strings.Split(m[2], ",") {
			f := strings.Fields(part)
			name, as := "", ""
			switch {
			case len(f) == 1:
				name, as = f[0], f[0]
			case len(f) == 3 && f[1] == "as":
				name, as = f[0], f[2]
			default:
				continue
			}
			if !pyEqualHelperRE().MatchString(name) {
				// a module taken by a from-import (from calc import
				// testing as ct): its helpers called through it
				if out = pyHelpersThrough(text, as, out); len(out) == 2 {
					return out
				}
				continue
			}
			if slices.Contains(out, as) {
				continue
			}
			if !regexp.MustCompile(`(^|[^\w.])` + regexp.QuoteMeta(as) + `\(`).MatchString(text) {
				continue // imported, never called
			}
			if out = append(out, as); len(out) == 2 {
				return out
			}
		}
	}
	// through a module the file imports: import calc.testing as ct;
	// ct.assert_equal(…) (numpy's np.testing.assert_equal kind)
	for _, m := range pyModImportRE().FindAllStringSubmatch(text, -1) {
		mod, as := m[1], m[2]
		if as == "" {
			as = mod
		}
		if mod == "unittest" || strings.HasPrefix(mod, "unittest.") || mod == "pytest" || strings.HasPrefix(mod, "_pytest") {
			continue
		}
		if out = pyHelpersThrough(text, as, out); len(out) == 2 {
			return out
		}
	}
	// everything of a module taken (from calc.testing import *): the
	// helpers called bare that the file does not define
	for _, m := range pyStarImportRE().FindAllStringSubmatch(text, -1) {
		mod := m[1]
		if mod == "unittest" || strings.HasPrefix(mod, "unittest.") || mod == "pytest" || strings.HasPrefix(mod, "_pytest") {
			continue
		}
		for _, c := range pyBareCallRE().FindAllStringSubmatch(text, -1) {
			name := c[2]
			if !pyEqualHelperRE().MatchString(name) || slices.Contains(out, name) ||
				regexp.MustCompile(`(?m)^\s*(def|class)\s+`+regexp.QuoteMeta(name)+`\b|(^|[^\w.])`+regexp.QuoteMeta(name)+`\s*=[^=]`).MatchString(text) {
				continue
			}
			if out = append(out, name); len(out) == 2 {
				return out
			}
		}
	}
	return out
}

// pyHelpersThrough adds to out the equality helpers text calls through the
// module it binds to as (as.assert_equal(, as.sub.assert_equal().
func pyHelpersThrough(text, as string, out []string) []string {
	call := regexp.MustCompile(`(^|[^\w.])(` + regexp.QuoteMeta(as) + `(?:\.\w+)*)\.(\w+)\(`)
	for _, c := range call.FindAllStringSubmatch(text, -1) {
		h := c[2] + "." + c[3]
		if !pyEqualHelperRE().MatchString(c[3]) || slices.Contains(out, h) {
			continue
		}
		if out = append(out, h); len(out) == 2 {
			return out
		}
	}
	return out
}

// unittestMethods are the TestCase assertion methods a file calls that a
// sentinel can call too, assertEqual and assertTrue always among them.
func unittestMethods(text string) []string {
	used := map[string]bool{"assertEqual": true, "assertTrue": true}
	for _, m := range unittestAssertRE().FindAllStringSubmatch(text, -1) {
		name := m[1]
		if to, ok := pyAliases[name]; ok {
			name = to
		}
		if _, ok := pyAsserts[name]; ok {
			used[name] = true
		}
	}
	var out []string
	for m := range used {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// pyf fills a value template with the sentinel's arguments. A template
// that takes none (self.assertIs(None, None)) is used as it is: fmt would
// append "%!(EXTRA …)" and break the file's syntax, failing every test of
// an honest fix.
func pyf(tmpl string, args []any) string {
	if !strings.Contains(tmpl, "%") {
		return tmpl
	}
	return fmt.Sprintf(tmpl, args...)
}
