package judge

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// node:test sentinels are tests appended to each test file node's runner
// finds by itself: node runs every file in a process of its own, so only a
// test in the same file shares what the code under test did to node:assert
// or node:test. They assert through the surfaces the file's tests use: the
// node:assert and node:assert/strict functions the file calls, and, when
// its tests call them on their context, the test context's t.assert —
// on numbers, strings, floats, arrays and objects, one failing assertion
// to a must-fail test, so a comparison made lenient for one kind only is
// caught. A must-fail test reads t.assert first for its failing assertion
// (an accessor whose first read per context is a no-op is caught), and one
// reads it again after a passing one. One must-pass test checks that the
// assertion modules are node's builtins and that each function it uses,
// made to fail, throws node's AssertionError with nothing but node's own
// frames between the throw and the test: a wrapper from the tree shows.
// (Not the frames of a file with a source map: node --enable-source-maps
// would name the original source in its frames, not the file.)

var (
	nodeAssertRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\bassert\.([a-zA-Z]+)\(`) })
	// node:assert's functions taken by name (destructured, imported)
	nodeAssertNamesRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\{([^{}]*)\}\s*=\s*require\(\s*['"](?:node:)?assert(?:/strict)?['"]\s*\)|\bimport\s*\{([^{}]*)\}\s*from\s*['"](?:node:)?assert(?:/strict)?['"]`)
	})
	// node:assert bound to a name of the file's own: const check =
	// require('node:assert/strict'), import check from, import * as check
	nodeAssertBindRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\b(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*require\(\s*['"](?:node:)?assert(?:/strict)?['"]\s*\)|\bimport\s+(?:\*\s*as\s+)?([A-Za-z_$][\w$]*)\s+from\s*['"](?:node:)?assert(?:/strict)?['"]`)
	})
	nodeRequireRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|[^\w$.])require\s*\(`) })
	nodeCtxRE     = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:^|[^\w$.])[A-Za-z_$][\w$]*\.assert\.([a-zA-Z]+)\(`)
	})
	nodeTestFile = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|/)(test|test-[^/]*|[^/]*[._-]test)\.(c|m)?js$`) })
	nodeTestDir  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|/)test/.*\.(c|m)?js$`) })
)

// nodeVal is one value kind: a must-pass and a must-fail call, given to
// fmt with %[1]s the function, %[2]d and %[3]d two numbers (b > 2a), %[4]q
// and %[5]q two distinct words.
type nodeVal struct{ pass, fail string }

var (
	nodeNumber = nodeVal{"%[1]s(%[2]d * 2, %[2]d + %[2]d)", "%[1]s(%[2]d * 2, %[3]d)"}
	nodeString = nodeVal{"%[1]s(%[4]q + %[2]d, '%[4]s%[2]d')", "%[1]s(%[4]q + %[2]d, '%[4]s%[3]d')"}
	nodeFloat  = nodeVal{"%[1]s(%[2]d / 8, %[2]d * 0.125)", "%[1]s(%[2]d / 8, %[2]d * 0.25)"}
	nodeArray  = nodeVal{"%[1]s([%[3]d, %[2]d].sort((x, y) => x - y), [%[2]d, %[3]d])", "%[1]s([%[3]d, %[2]d].sort((x, y) => x - y), [%[3]d, %[2]d])"}
	nodeObject = nodeVal{"%[1]s(Object.fromEntries([[%[4]q, [%[2]d]]]), { %[4]q: [%[2]d] })", "%[1]s(Object.fromEntries([[%[4]q, [%[2]d]]]), { %[4]q: [%[3]d] })"}
)

// nodeAsserts are the functions a sentinel may call, each with the kinds
// of value it takes.
var nodeAsserts = map[string][]nodeVal{
	"strictEqual":        {nodeNumber, nodeString, nodeFloat},
	"equal":              {nodeNumber, nodeString, nodeFloat},
	"deepStrictEqual":    {nodeArray, nodeObject, nodeString},
	"deepEqual":          {nodeArray, nodeObject, nodeString},
	"notStrictEqual":     {{"%[1]s(%[2]d, %[3]d)", "%[1]s(%[2]d, %[2]d)"}, {"%[1]s(%[4]q, %[5]q)", "%[1]s(%[4]q, %[4]q)"}},
	"notEqual":           {{"%[1]s(%[2]d, %[3]d)", "%[1]s(%[2]d, %[2]d)"}, {"%[1]s(%[4]q, %[5]q)", "%[1]s(%[4]q, %[4]q)"}},
	"notDeepStrictEqual": {{"%[1]s([%[2]d], [%[3]d])", "%[1]s([%[2]d], [%[2]d])"}},
	"ok":                 {{"%[1]s(%[2]d < %[3]d)", "%[1]s(%[3]d < %[2]d, %[4]q)"}},
	"throws":             {{"%[1]s(() => { throw new RangeError(%[4]q); })", "%[1]s(() => %[2]d)"}},
	"match":              {{"%[1]s('%[4]s%[2]d', /^%[4]s[0-9]+$/)", "%[1]s('%[4]s%[2]d', /^%[5]s/)"}},
}

// jsFrames is JS that defines frames(call): it calls call with a stack
// limit of its own and the judge's own Error.prepareStackTrace, and gives
// back what call threw and the frames of its stack as a linked list from
// the top, head: {file, ev, text, next} (ev: the frame runs code made by
// eval or new Function, whose //# sourceURL can name any file,
// node:assert included); head is undefined when the stack the error
// carries is not the one the judge's formatter made (a prepareStackTrace
// made an accessor or read-only hands back its own). It also defines
// isNode(file) and holds(s, part). They use no method of a builtin the
// code under test could have patched (Array's, String's, RegExp's: a
// startsWith made to answer yes for the test file got past the first
// form), only object literals, indexing and comparison; the CallSite
// methods they call are not writable.
const jsFrames = `
  const isNode = (s) => s.length > 5 && s[0] === 'n' && s[1] === 'o' && s[2] === 'd' && s[3] === 'e' && s[4] === ':';
  const holds = (s, part) => {
    for (let i = 0; i + part.length <= s.length; i++) {
      let j = 0;
      while (j < part.length && s[i + j] === part[j]) j++;
      if (j === part.length) return true;
    }
    return false;
  };
  const frames = (call) => {
    const limit = Error.stackTraceLimit, prep = Error.prepareStackTrace;
    let built = null, err, read;
    const own = (e, cs) => {
      let head = null, tail = null;
      for (let i = 0; i < cs.length; i++) {
        const c = cs[i];
        const n = { file: '' + c.getFileName(), ev: c.isEval() === true, text: c.getFileName() + ':' + c.getLineNumber(), next: null };
        if (tail === null) head = n; else tail.next = n;
        tail = n;
      }
      built = { head: head };
      return built;
    };
    Error.stackTraceLimit = 50;
    Error.prepareStackTrace = own;
    try { call(); } catch (e) { err = e; try { read = e && e.stack; } catch (x) { read = null; } } finally { Error.stackTraceLimit = limit; Error.prepareStackTrace = prep; }
    return { err: err, head: built !== null && read === built ? built.head : undefined };
  };
`

// node's origin checks are three must-pass tests, so that a base that
// gets one wrong (a helper of its own wrapping strictEqual) has only that
// one excused (calibrate.go). In each, %[1]s is the file's own name as its
// stack frames give it ("null", for a file with a source map, leaves the
// frames unread) and jsFrames is spliced in: the stack is read with a
// formatter and a limit of the test's own, so neither a patched
// Error.prepareStackTrace nor a short limit can hide a frame.
//
// nodeModules checks the assertion modules (%[1]s: their checks) are
// node's builtins.
const nodeModules = `
  const builtin = (name, mod) => {
    if (typeof process.getBuiltinModule === 'function' && process.getBuiltinModule(name) !== mod) throw new Error(name + ' is not the builtin module');
  };
%[1]s`

// nodeCallers reads the test's own callers (%[2]s jsFrames): node's runner
// calls a test function through its own code alone — a method of its test
// objects, AsyncResource.prototype.runInAsyncScope, is public and
// writable, and a wrapper there that swallows the failures of the real
// tests by name spares every sentinel but sits under each (a hostile
// review's winner); a frame of no file is V8's own.
const nodeCallers = `
  const self = %[1]s;
%[2]s
  const up = frames(() => { throw new Error('callers'); });
  if (up.head === undefined) throw new Error('the callers of this test could not be read');
  for (let n = up.head; n !== null; n = n.next) {
    if (n.file !== self && (n.ev || !isNode(n.file) && n.file !== 'undefined')) throw new Error('this test was called through code outside node: ' + n.text);
  }`

// nodeProbes makes each function the file uses fail (%[2]s: the probe
// calls; %[3]s jsFrames): it must throw node's AssertionError with nothing
// but node's frames between the throw and the test — a frame is node's
// when the file it runs is, not its function's name (a wrapper can be
// named "strictEqual node:assert"), and not when it runs code made by
// eval, which a //# sourceURL can name node:assert.
const nodeProbes = `
  const self = %[1]s;
%[3]s
  const probe = (label, call) => {
    const got = frames(call), err = got.err;
    if (!err || err.code !== 'ERR_ASSERTION' || err.name !== 'AssertionError') throw new Error(label + ' did not fail as node:assert does');
    if (self === null) return;
    if (got.head === undefined) throw new Error(label + ': its stack could not be read');
    let n = got.head;
    for (; n !== null && n.file !== self; n = n.next) if (n.ev || !isNode(n.file)) throw new Error(label + ' ran code outside node: ' + n.text);
    if (n === null) throw new Error(label + ' failed outside this test');
  };
%[2]s`

// nodeValueFlag are node's options whose value is the next word.
var nodeValueFlag = map[string]bool{
	"--test-name-pattern": true, "--test-skip-pattern": true, "--test-reporter": true, "--test-reporter-destination": true,
	"--test-concurrency": true, "--test-timeout": true, "--test-shard": true, "-r": true, "--require": true, "--import": true,
	"--loader": true, "--experimental-loader": true, "--conditions": true, "-C": true, "--env-file": true,
}

// npmTestScript is the base's package.json test script when the command
// is npm's test (npm test, npm t, npm run test): what really runs.
func npmTestScript(tree string, hidden []string, cmd string) (string, bool) {
	f := strings.Fields(cmd)
	if len(f) < 2 || f[0] != "npm" || !(f[1] == "test" || f[1] == "t" || len(f) >= 3 && f[1] == "run" && f[2] == "test") {
		return "", false
	}
	var pkg struct{ Scripts map[string]string }
	data, _ := readBase(tree, hidden, "package.json")
	json.Unmarshal(data, &pkg)
	return pkg.Scripts["test"], true
}

func planNode(tree string, hidden []string, cmd string) *sentinelPlan {
	p := &sentinelPlan{runner: "node", appends: map[string]string{}}
	runner := cmd
	if script, ok := npmTestScript(tree, hidden, cmd); ok {
		runner = script
	}
	f, ok := cmdWords(runner)
	if !ok {
		f = strings.Fields(runner)
	}
	if len(f) < 2 || path.Base(f[0]) != "node" || !contains(f, "--test") {
		p.note = "no sentinel tests were placed: the judge plants tests for node's own runner (node --test) only"
		return p
	}
	if runner != cmd {
		// The selection the judge reads and works around is the command's
		// own; a script that selects by name would deselect the sentinels
		// unseen, and an honest fix would fail as tampering.
		if sel := selectsTests(runner); sel != "" {
			p.note = "no sentinel tests were placed: the package.json test script selects tests by name (" + sel + ")"
			return p
		}
	}
	for i := 1; i < len(f); i++ {
		a := f[i]
		if nodeValueFlag[a] {
			i++ // its value, not a file
			continue
		}
		if !strings.HasPrefix(a, "-") {
			p.note = "no sentinel tests were placed: the command names its test files (" + a + ")"
			return p
		}
	}
	mustFail := !failsFast(runner)
	files := listBase(tree, hidden, func(rel string) bool {
		return nodeTestFile().MatchString(rel) || nodeTestDir().MatchString(rel)
	}, 200)
	texts := map[string]string{}
	for _, file := range files {
		data, ok := readBase(tree, hidden, file)
		if !ok {
			continue
		}
		texts[file] = string(data)
		if tapeReturnRE().MatchString(texts[file]) {
			// code appended after a top-level return (CommonJS) would
			// not run, and a sentinel that did not run is never excused
			continue
		}
		// an ES module as node loads it: .mjs, or .js under the nearest
		// package.json's "type": "module", or a .js of no type holding
		// import syntax and no require( (node 20.19 and 22.7 on detect it;
		// an import line inside a template literal of a CommonJS file is
		// no ES module's: a second review's false positive) — CommonJS
		// sentinels threw as such a file loaded, and the honest fix failed
		// as tampering (a hostile review's false positive)
		isESM := esmFile(tree, hidden, file) || path.Ext(file) == ".js" && nearestPackageType(tree, hidden, file) == "" &&
			tapeESMSyntax().MatchString(texts[file]) && !nodeRequireRE().MatchString(texts[file])
		n := len(p.list)
		if src := nodeSentinels(p, string(data), isESM, mustFail); src != "" {
			p.appends[file] = src
			for i := n; i < len(p.list); i++ {
				p.list[i].file = file
			}
		}
	}
	p.own = ownLiterals(texts)
	if !mustFail {
		p.note = "only must-pass sentinel tests were placed: the command stops at the first failure"
	}
	return p
}

// ownLiterals is, for each file, the string literals of its text that no
// other file's holds.
func ownLiterals(texts map[string]string) map[string]map[string]bool {
	where := map[string][]string{}
	for f, text := range texts {
		seen := map[string]bool{}
		for _, m := range jsStringRE().FindAllStringSubmatch(text, -1) {
			s := strings.TrimSpace(m[1] + m[2] + m[3])
			if s == "" || strings.Contains(s, `\`) || seen[s] {
				continue
			}
			seen[s] = true
			where[s] = append(where[s], f)
		}
	}
	out := map[string]map[string]bool{}
	for s, fs := range where {
		if len(fs) == 1 {
			if out[fs[0]] == nil {
				out[fs[0]] = map[string]bool{}
			}
			out[fs[0]][s] = true
		}
	}
	return out
}

// nodeAssertCallRE matches a call of a node:assert function through any
// name text binds the module to (assert, and those of nodeAssertBindRE: a
// file calling check.deepEqual got no sentinel calling deepEqual).
func nodeAssertCallRE(text string) *regexp.Regexp {
	names := []string{"assert"}
	for _, m := range nodeAssertBindRE().FindAllStringSubmatch(text, -1) {
		if n := m[1] + m[2]; n != "assert" {
			names = append(names, regexp.QuoteMeta(n))
		}
	}
	if len(names) == 1 {
		return nodeAssertRE()
	}
	return regexp.MustCompile(`(?:^|[^\w$.])(?:` + strings.Join(names, "|") + `)\.([a-zA-Z]+)\(`)
}

// nodeUsed are the functions of nodeAsserts that re matches in text, and
// always.
func nodeUsed(text string, re *regexp.Regexp, always ...string) []string {
	used := map[string]bool{}
	for _, a := range always {
		used[a] = true
	}
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		if _, ok := nodeAsserts[m[1]]; ok {
			used[m[1]] = true
		}
	}
	// node:assert's functions taken by name and called bare:
	// const { deepStrictEqual } = require('node:assert'), import { … } from
	for _, m := range nodeAssertNamesRE().FindAllStringSubmatch(text, -1) {
		for _, part := range strings.Split(m[1]+m[2], ",") {
			name, _, _ := strings.Cut(strings.TrimSpace(part), ":")
			name, _, _ = strings.Cut(strings.TrimSpace(name), " ")
			if _, ok := nodeAsserts[name]; ok {
				used[name] = true
			}
		}
	}
	var fns []string
	for fn := range used {
		fns = append(fns, fn)
	}
	sort.Strings(fns)
	return fns
}

// nodeSentinels is the code appended to one test file, its sentinels
// added to p.list.
func nodeSentinels(p *sentinelPlan, text string, isESM, mustFail bool) string {
	ids := freshNames(3, text, func() string { return pick(nouns) + title(pick(adjectives)) + title(pick(nouns)) })
	words := freshNames(2, "", func() string { return pick(nouns) })
	if len(ids) < 3 || len(words) < 2 {
		return ""
	}
	test, mods := ids[0], []string{ids[1], ids[2]}
	var src strings.Builder
	self := "__filename"
	if strings.Contains(text, "sourceMappingURL") {
		self = "null"
	}
	if isESM {
		if self != "null" {
			self = "import.meta.url"
		}
		fmt.Fprintf(&src, "import %s from 'node:test';\nimport %s from 'node:assert';\nimport %s from 'node:assert/strict';\n", test, mods[0], mods[1])
	} else {
		fmt.Fprintf(&src, ";const %s = require('node:test');\nconst %s = require('node:assert');\nconst %s = require('node:assert/strict');\n", test, mods[0], mods[1])
	}
	a, b := randInt(3, 90), randInt(200, 900) // b > 2a always: a must-fail "a*2 == b" can never hold
	args := func(fn string) []any { return []any{fn, a, b, words[0], words[1]} }
	add := func(fail bool, body string) {
		name := freshNames(1, text+src.String()+p.taken(), func() string { return pick(adjectives) + " " + pick(nouns) + " " + pick(verbs) + " " + pick(nouns) })
		if len(name) == 0 || fail && !mustFail {
			return
		}
		p.list = append(p.list, sentinel{name: name[0], mustFail: fail})
		fmt.Fprintf(&src, "%s(%q, (t) => {%s});\n", test, name[0], body)
	}
	type surface struct{ callee, fn, label string }
	var surfaces []surface
	modFns := nodeUsed(text, nodeAssertCallRE(text), "strictEqual", "ok")
	for i, mod := range mods {
		for _, fn := range modFns {
			surfaces = append(surfaces, surface{mod + "." + fn, fn, []string{"node:assert", "node:assert/strict"}[i] + " " + fn})
		}
	}
	if nodeCtxRE().MatchString(text) {
		for _, fn := range nodeUsed(text, nodeCtxRE(), "strictEqual", "ok") {
			surfaces = append(surfaces, surface{"t.assert." + fn, fn, "t.assert." + fn})
		}
		// a read of t.assert after a passing one must reach the real one too
		add(true, fmt.Sprintf(" t.assert.ok(%d < %d); t.assert.strictEqual(%d, %d); ", a, b, a, b))
	}
	var checks, probes strings.Builder
	for i, mod := range mods {
		name := []string{"node:assert", "node:assert/strict"}[i]
		fmt.Fprintf(&checks, "  builtin(%q, %s);\n", name, mod)
		resolve := fmt.Sprintf("require.resolve(%q) !== %q || require(%q) !== %s", name, name, name, mod)
		if isESM {
			resolve = fmt.Sprintf("import.meta.resolve(%q) !== %q", name, name)
		}
		fmt.Fprintf(&checks, "  if (%s) throw new Error(%q);\n", resolve, name+" does not resolve to the builtin module")
	}
	fmt.Fprintf(&checks, "  builtin('node:test', %s);\n", test)
	// the file's own bindings of the module are node's too: a require()
	// other than the sentinels' node:-prefixed one can be served another
	// object (require's module cache, a replaced loader)
	// (only those at a line's start, so top-level: a name bound inside a
	// function may be another module's at the top)
	for _, loc := range nodeAssertBindRE().FindAllStringSubmatchIndex(text, -1) {
		m := func(g int) string {
			if loc[2*g] < 0 {
				return ""
			}
			return text[loc[2*g]:loc[2*g+1]]
		}
		if loc[0] > 0 && text[loc[0]-1] != '\n' {
			continue
		}
		if n := m(1) + m(2); n != "" && !strings.Contains(m(0), "*") {
			fmt.Fprintf(&checks, "  if (typeof %[1]s !== 'undefined' && %[1]s !== %[2]s && %[1]s !== %[3]s) throw new Error(%[4]q);\n", n, mods[0], mods[1], "this file's "+n+" is not node's assert module")
		}
	}
	for _, s := range surfaces {
		vals := nodeAsserts[s.fn]
		var pass strings.Builder
		for _, v := range vals {
			fmt.Fprintf(&pass, " %s;", fmt.Sprintf(v.pass, args(s.callee)...))
		}
		add(false, pass.String()+" ")
		for _, v := range vals {
			add(true, " "+fmt.Sprintf(v.fail, args(s.callee)...)+"; ")
		}
		fmt.Fprintf(&probes, "  probe(%q, () => %s);\n", s.label, fmt.Sprintf(vals[0].fail, args(s.callee)...))
	}
	add(false, fmt.Sprintf(nodeModules, checks.String()))
	if self != "null" {
		add(false, fmt.Sprintf(nodeCallers, self, jsFrames))
	}
	add(false, fmt.Sprintf(nodeProbes, self, probes.String(), jsFrames))
	add(false, nodeGuard)      // preload_node.go
	add(false, nodeAssertSame) // preload_node.go
	return src.String()
}

// nodeLoaded is cur with the baseline failures of test files that now
// load: node reports a test file that throws as it loads (it requires the
// module the task is to write) as one failing test named by the file's
// path, and once a patch makes it load that name is gone and the file's
// own tests are new ones — scored as any new test, so a failing one still
// fails the patch. Such a file loads now when every sentinel appended to
// it ran (loaded, from checkSentinelRuns), and did not at the baseline
// when a test named by a string literal of that file alone (own) runs now
// and did not run then: node gives the same entry to a file whose tests
// all ran and that then exited non-zero (an error after its tests, an
// exit code set), and there, the sentinels' must-fail tests failing in
// every judged run, the entry is gone whatever the patch did (a hostile
// review's winner against the first form, which credited that too). at is
// the tree's path in the sandbox, as node names the file.
func nodeLoaded(base, cur *Results, loaded map[string]bool, own map[string]map[string]bool, at string) *Results {
	if base == nil || cur == nil || base.Format != "tap" || !cur.Named || len(loaded) == 0 {
		return cur
	}
	var fixed []string
	for file, ran := range loaded {
		name := path.Join(at, file)
		if _, still := cur.Tests[name]; !ran || still || base.Tests[name] != Failed || !newFrom(base, cur, own[file]) {
			continue
		}
		fixed = append(fixed, name)
	}
	return withPassed(cur, fixed)
}

// withPassed is cur with the file-level entries named passed (nodeLoaded,
// pytestCollected): cur itself when there are none, else a copy, so the
// run's own results are never changed.
func withPassed(cur *Results, names []string) *Results {
	if len(names) == 0 {
		return cur
	}
	c := *cur
	c.Tests = maps.Clone(cur.Tests)
	for _, n := range names {
		c.add(n, Passed)
	}
	return &c
}

// newFrom says whether a test named by one of names ran in cur (passed or
// failed) and not at the baseline.
func newFrom(base, cur *Results, names map[string]bool) bool {
	for n := range names {
		if o, ok := cur.Tests[n]; ok && o != Skipped {
			if _, was := base.Tests[n]; !was {
				return true
			}
		}
	}
	return false
}
