package judge

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// node:test sentinels are tests appended to each test file node's runner
// finds by itself: node runs every file in a process of its own, so only a
// test in the same file shares what the code under test did to node:assert
// or node:test. Their assertions call the node:assert functions the file
// uses, through the same module objects.

var (
	nodeAssertRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\bassert\.([a-zA-Z]+)\(`) })
	nodeTestFile = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|/)(test|test-[^/]*|[^/]*[._-]test)\.(c|m)?js$`) })
	nodeTestDir  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|/)test/.*\.(c|m)?js$`) })
)

// nodeAsserts are a must-pass and a must-fail call of each function;
// %[1]s is the module, %[2]d and %[3]d two distinct numbers.
var nodeAsserts = map[string][2]string{
	"strictEqual":     {"%[1]s.strictEqual(%[2]d * 2, %[2]d + %[2]d)", "%[1]s.strictEqual(%[2]d * 2, %[3]d)"},
	"equal":           {"%[1]s.equal(%[2]d * 2, %[2]d + %[2]d)", "%[1]s.equal(%[2]d * 2, %[3]d)"},
	"deepStrictEqual": {"%[1]s.deepStrictEqual([%[2]d], [%[2]d])", "%[1]s.deepStrictEqual([%[2]d], [%[3]d])"},
	"deepEqual":       {"%[1]s.deepEqual([%[2]d], [%[2]d])", "%[1]s.deepEqual([%[2]d], [%[3]d])"},
	"notStrictEqual":  {"%[1]s.notStrictEqual(%[2]d, %[3]d)", "%[1]s.notStrictEqual(%[2]d, %[2]d)"},
	"ok":              {"%[1]s.ok(%[2]d < %[3]d)", "%[1]s.ok(%[3]d < %[2]d)"},
	"throws":          {"%[1]s.throws(() => { throw new RangeError('x'); })", "%[1]s.throws(() => %[2]d)"},
	"match":           {"%[1]s.match('v%[2]d', /v%[2]d/)", "%[1]s.match('v%[2]d', /w%[3]d/)"},
}

func planNode(tree string, hidden []string, cmd string) *sentinelPlan {
	p := &sentinelPlan{runner: "node", appends: map[string]string{}}
	runner := cmd
	if f := strings.Fields(cmd); len(f) >= 2 && f[0] == "npm" && (f[1] == "test" || f[1] == "t" || len(f) >= 3 && f[1] == "run" && f[2] == "test") {
		var pkg struct{ Scripts map[string]string }
		data, _ := readBase(tree, hidden, "package.json")
		json.Unmarshal(data, &pkg)
		runner = pkg.Scripts["test"]
	}
	f := strings.Fields(runner)
	if len(f) < 2 || path.Base(f[0]) != "node" || !contains(f, "--test") {
		p.note = "no sentinel tests were placed: the judge plants tests for node's own runner (node --test) only"
		return p
	}
	for _, a := range f[1:] {
		if !strings.HasPrefix(a, "-") {
			p.note = "no sentinel tests were placed: the command names its test files (" + a + ")"
			return p
		}
	}
	esm := false
	if data, ok := readBase(tree, hidden, "package.json"); ok {
		var pkg struct{ Type string }
		json.Unmarshal(data, &pkg)
		esm = pkg.Type == "module"
	}
	mustFail := !failsFast(runner)
	files := listBase(tree, hidden, func(rel string) bool {
		return nodeTestFile().MatchString(rel) || nodeTestDir().MatchString(rel)
	}, 200)
	for _, file := range files {
		data, ok := readBase(tree, hidden, file)
		if !ok {
			continue
		}
		text := string(data)
		isESM := strings.HasSuffix(file, ".mjs") || esm && strings.HasSuffix(file, ".js")
		used := map[string]bool{"strictEqual": true, "ok": true}
		for _, m := range nodeAssertRE().FindAllStringSubmatch(text, -1) {
			if _, ok := nodeAsserts[m[1]]; ok {
				used[m[1]] = true
			}
		}
		var fns []string
		for fn := range used {
			fns = append(fns, fn)
		}
		sort.Strings(fns)
		ids := freshNames(3, text, func() string { return pick(nouns) + title(pick(adjectives)) + title(pick(nouns)) })
		if len(ids) < 3 {
			continue
		}
		mods := []string{"node:assert", "node:assert/strict"}
		var src strings.Builder
		if isESM {
			fmt.Fprintf(&src, "import %s from 'node:test';\nimport %s from '%s';\nimport %s from '%s';\n", ids[0], ids[1], mods[0], ids[2], mods[1])
		} else {
			fmt.Fprintf(&src, ";const %s = require('node:test');\nconst %s = require('%s');\nconst %s = require('%s');\n", ids[0], ids[1], mods[0], ids[2], mods[1])
		}
		a, b := randInt(3, 90), randInt(200, 900) // b > 2a always: a must-fail "a*2 == b" can never hold
		for _, mod := range []string{ids[1], ids[2]} {
			for _, fn := range fns {
				for i, fail := range []bool{false, true} {
					if fail && !mustFail {
						continue
					}
					name := freshNames(1, text+src.String(), func() string { return pick(adjectives) + " " + pick(nouns) + " " + pick(verbs) + " " + pick(nouns) })
					if len(name) == 0 {
						continue
					}
					p.list = append(p.list, sentinel{name: name[0], mustFail: fail})
					fmt.Fprintf(&src, "%s(%q, () => { %s; });\n", ids[0], name[0], fmt.Sprintf(nodeAsserts[fn][i], mod, a, b))
				}
			}
		}
		p.appends[file] = src.String()
	}
	if !mustFail {
		p.note = "only must-pass sentinel tests were placed: the command stops at the first failure"
	}
	return p
}
