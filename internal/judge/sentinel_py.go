package judge

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// pytest sentinels are test functions appended to each test file the
// baseline ran — in the same module, so whatever the code under test did
// to pytest or to the assertions it uses (a plugin, a patched report
// class, a replaced TestCase.assertEqual) reaches them too. A file of
// unittest classes also gets a TestCase whose methods use the assertion
// methods that file uses.

var unittestAssertRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`self\.(assert[A-Za-z]+)\(`) })

// pyAsserts are a must-pass and a must-fail call of each assertion
// method a sentinel may use; %[1]d and %[2]d are two distinct numbers.
var pyAsserts = map[string][2]string{
	"assertEqual":    {"self.assertEqual(%[1]d * 2, %[1]d + %[1]d)", "self.assertEqual(%[1]d * 2, %[2]d)"},
	"assertEquals":   {"self.assertEqual(%[1]d * 2, %[1]d + %[1]d)", "self.assertEqual(%[1]d * 2, %[2]d)"},
	"assertNotEqual": {"self.assertNotEqual(%[1]d, %[2]d)", "self.assertNotEqual(%[1]d, %[1]d)"},
	"assertTrue":     {"self.assertTrue(%[1]d < %[2]d)", "self.assertTrue(%[2]d < %[1]d)"},
	"assertFalse":    {"self.assertFalse(%[2]d < %[1]d)", "self.assertFalse(%[1]d < %[2]d)"},
	"assertIn":       {"self.assertIn(%[1]d, [%[2]d, %[1]d])", "self.assertIn(%[1]d, [%[2]d])"},
	"assertIsNone":   {"self.assertIsNone(None)", "self.assertIsNone(%[1]d)"},
	"assertGreater":  {"self.assertGreater(%[2]d, %[1]d)", "self.assertGreater(%[1]d, %[2]d)"},
	"assertLess":     {"self.assertLess(%[1]d, %[2]d)", "self.assertLess(%[2]d, %[1]d)"},
	"assertRaises":   {"self.assertRaises(ZeroDivisionError, lambda: %[1]d // 0)", "self.assertRaises(ZeroDivisionError, lambda: %[1]d // %[2]d)"},
}

func planPytest(tree string, hidden []string, cmd string, base *Results) *sentinelPlan {
	p := &sentinelPlan{runner: "pytest", appends: map[string]string{}}
	for _, cfg := range []string{"pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"} {
		if data, ok := readBase(tree, hidden, cfg); ok && (strings.Contains(string(data), "python_functions") || strings.Contains(string(data), "python_classes")) {
			p.note = "no sentinel tests were placed: " + cfg + " changes which functions pytest collects"
			return p
		}
	}
	mustFail := !failsFast(cmd)
	files := map[string]bool{}
	for name := range base.Tests {
		if f, _, ok := strings.Cut(name, "::"); ok && strings.HasSuffix(f, ".py") {
			files[f] = true
		}
	}
	var sorted []string
	for f := range files {
		sorted = append(sorted, f)
	}
	sort.Strings(sorted)
	for _, f := range sorted {
		data, ok := readBase(tree, hidden, f)
		if !ok {
			continue
		}
		text := string(data)
		names := freshNames(3, text, func() string { return "test_" + pick(adjectives) + "_" + pick(nouns) })
		if len(names) < 3 {
			continue
		}
		a, b := randInt(3, 90), randInt(200, 900) // b > 2a always: a must-fail "a*2 == b" can never hold
		var src strings.Builder
		add := func(name string, fail bool, body string) {
			p.list = append(p.list, sentinel{name: f + "::" + name, mustFail: fail, scope: f + "::"})
			fmt.Fprintf(&src, "\n\ndef %s():\n    %s\n", name, body)
		}
		add(names[0], false, fmt.Sprintf("assert %d * 2 == %d", a, 2*a))
		if mustFail {
			add(names[1], true, fmt.Sprintf("assert %d * 2 == %d", a, b))
		}
		add(names[2], false, fmt.Sprintf("assert sorted([%d, %d]) == [%d, %d]", b, a, a, b))
		if strings.Contains(text, "TestCase") {
			used := map[string]bool{"assertEqual": true, "assertTrue": true}
			for _, m := range unittestAssertRE().FindAllStringSubmatch(text, -1) {
				if _, ok := pyAsserts[m[1]]; ok {
					used[m[1]] = true
				}
			}
			cls := freshNames(1, text, func() string { return "Test" + title(pick(adjectives)) + title(pick(nouns)) })
			if len(cls) == 1 {
				fmt.Fprintf(&src, "\n\nimport unittest\n\n\nclass %s(unittest.TestCase):\n", cls[0])
				var methods []string
				for m := range used {
					methods = append(methods, m)
				}
				sort.Strings(methods)
				for _, m := range methods {
					for i, fail := range []bool{false, true} {
						if fail && !mustFail {
							continue
						}
						mn := freshNames(1, text+src.String(), func() string { return "test_" + pick(verbs) + "_" + pick(nouns) })
						if len(mn) == 0 {
							continue
						}
						p.list = append(p.list, sentinel{name: f + "::" + cls[0] + "::" + mn[0], mustFail: fail, scope: f + "::"})
						fmt.Fprintf(&src, "    def %s(self):\n        %s\n\n", mn[0], fmt.Sprintf(pyAsserts[m][i], a, b))
					}
				}
			}
		}
		p.appends[f] = src.String()
	}
	if !mustFail {
		p.note = "only must-pass sentinel tests were placed: the command stops at the first failure (-x, --maxfail)"
	}
	return p
}
