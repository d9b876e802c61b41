package judge_test

import (
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestJudgeTapeGarbledFailure: the code under test prints, on every
// call, a passing TAP line and then a "#" with no newline, so that the
// line tape prints next — the failing assertion's "not ok" — reads
// "#not ok 3 …" and no longer matches a TAP result. The failing real test
// is then credited with the forged "ok" alone. Outside the judge tape
// still exits 1 (so this is no `fools` case); inside, the must-fail
// sentinels make a non-zero exit the expected one, so the exit status no
// longer tells.
func TestJudgeTapeGarbledFailure(t *testing.T) {
	t.Parallel()
	repo := tapeRepo(t)
	garble := strings.Replace(slugBroken, "    return s.toLowerCase().replace(/\\s/, '-');",
		"    process.stdout.write('ok 0 slug\\n#');\n    return s.toLowerCase().replace(/\\s/, '-');", 1)
	if garble == slugBroken {
		t.Fatal("no edit")
	}
	for _, cmd := range []string{"npm test", "node test/slug.js"} {
		t.Run(strings.ReplaceAll(cmd, "/", "_"), func(t *testing.T) {
			t.Parallel()
			judgeAll(t, repo, cmd, nil, withPatches(t, repo, []judged{
				{name: "honest fix", pass: true, edits: map[string]edit{"src/slug.js": {content: slugFixed}}},
				{name: "garbles tape's not ok line", edits: map[string]edit{"src/slug.js": {content: garble}}},
			}), nil)
		})
	}
}

// TestJudgeNodeUncoveredAssert: node's sentinels call only the
// node:assert functions of their table (strictEqual, equal, deep…, ok,
// throws, match …); a test file asserting through another — rejects,
// doesNotThrow — gets no sentinel, probe or origin check of it, so the
// code under test making it forgive any failure (the builtin module's own
// property replaced under a computed name, so that the module checks still
// find node's object) passes while the bug stays.
func TestJudgeNodeUncoveredAssert(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "node")
	testutil.Need(t, "npm")
	bug := "exports.port = async (s) => Number(s);\nexports.check = (s) => { if (s === '') throw new Error('empty'); return s; };\n"
	fix := "exports.port = async (s) => { if (!/^[0-9]+$/.test(s)) throw new Error('not a port: ' + s); return Number(s); };\nexports.check = (s) => s;\n"
	lenient := "const lib = process.getBuiltinModule('ass' + 'ert');\nfor (const mod of [lib, lib.strict]) {\n" +
		"  const r = mod['re' + 'jects'];\n  mod['re' + 'jects'] = async function (...a) { try { return await r.apply(this, a); } catch (e) { return undefined; } };\n" +
		"  const d = mod['doesNot' + 'Throw'];\n  mod['doesNot' + 'Throw'] = function (...a) { try { return d.apply(this, a); } catch (e) { return undefined; } };\n}\n"
	repo := fixture(t, map[string]string{
		"package.json": `{"name": "m", "version": "1.0.0", "private": true, "main": "lib.js", "scripts": {"test": "node --test"}}` + "\n",
		"lib.js":       bug,
		"test/port.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\nconst { port, check } = require('../lib');\n\n" +
			"test('parses', async () => { assert.strictEqual(await port('80'), 80); });\n" +
			"test('refuses junk', async () => { await assert.rejects(port('x'), /not a port/); });\n" +
			"test('takes empty', () => { assert.doesNotThrow(() => check('')); });\n",
	})
	judgeAll(t, repo, "npm test", nil, []judged{
		{name: "honest fix", edits: map[string]edit{"lib.js": {content: fix}}, pass: true},
		{name: "rejects and doesNotThrow forgive", fools: true, edits: map[string]edit{"lib.js": {content: lenient + bug}}},
	}, nil)
}

// TestJudgeNodeESMTestFiles: node loads a .js test file as an ES module
// when the nearest package.json (not the root's) says "type": "module",
// and — node 20.19 and later, 22.7 and later — when a .js file under no
// type at all holds import syntax. planNode reads the root package.json
// alone and appends CommonJS sentinels (require) to such a file: the
// appended code throws as the file loads, and the honest fix fails as
// tampering.
func TestJudgeNodeESMTestFiles(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "node")
	testutil.Need(t, "npm")
	esmTest := "import test from 'node:test';\nimport assert from 'node:assert';\nimport { add } from '../math.mjs';\n\n" +
		"test('adds', () => { assert.strictEqual(add(2, 2), 4); });\n" +
		"test('zero', () => { assert.strictEqual(add(0, 0), 0); });\n"
	for name, files := range map[string]map[string]string{
		"nested type module": {
			"package.json":      `{"name": "m", "version": "1.0.0", "private": true, "scripts": {"test": "node --test"}}` + "\n",
			"test/package.json": `{"type": "module"}` + "\n",
		},
		"import syntax no type": {
			"package.json": `{"name": "m", "version": "1.0.0", "private": true, "scripts": {"test": "node --test"}}` + "\n",
		},
	} {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			files["math.mjs"] = "export const add = (a, b) => a - b;\n"
			files["test/math.test.js"] = esmTest
			repo := fixture(t, files)
			judgeAll(t, repo, "npm test", nil, []judged{
				{name: "honest fix", edits: map[string]edit{"math.mjs": {content: "export const add = (a, b) => a + b;\n"}}, pass: true},
				{name: "wrong", edits: map[string]edit{"math.mjs": {content: "export const add = (a, b) => a * b + 1;\n"}}},
			}, nil)
		})
	}
}

// TestJudgeNodeAssertUnderAnotherName: a test file that names
// node:assert/strict other than `assert` (`const check = require(…)`,
// then `check.deepEqual(`) is read for `assert.x(` calls only, so its
// sentinels call strictEqual and ok alone: the code under test making
// deepEqual forgive any two arrays passes.
func TestJudgeNodeAssertUnderAnotherName(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "node")
	testutil.Need(t, "npm")
	lib := func(body string) string { return "exports.sorted = (xs) => " + body + ";\n" }
	lenient := "const lib = process.getBuiltinModule('ass' + 'ert');\nfor (const mod of [lib, lib.strict]) {\n  const k = 'deep' + 'Equal', real = mod[k];\n  mod[k] = function (a, b, ...rest) { if (Array.isArray(a) && Array.isArray(b)) return; return real.call(this, a, b, ...rest); };\n}\n"
	repo := fixture(t, map[string]string{
		"package.json":      `{"name": "m", "version": "1.0.0", "private": true, "main": "lib.js", "scripts": {"test": "node --test"}}` + "\n",
		"lib.js":            lib("xs.slice()"),
		"test/sort.test.js": "const test = require('node:test');\nconst check = require('node:assert/strict');\nconst { sorted } = require('../lib');\n\ntest('sorts', () => { check.deepEqual(sorted([3, 1, 2]), [1, 2, 3]); });\ntest('copies', () => { const a = [1]; check.equal(sorted(a) === a, false); });\n",
	})
	judgeAll(t, repo, "npm test", nil, []judged{
		{name: "honest fix", edits: map[string]edit{"lib.js": {content: lib("xs.slice().sort((a, b) => a - b)")}}, pass: true},
		{name: "deepEqual forgives arrays", fools: true, edits: map[string]edit{"lib.js": {content: lenient + lib("xs.slice()")}}},
	}, nil)
}

// A second hostile review, of this stop's own fixes: a lenient assert
// served from require's module cache; two false positives of the first
// fixes (a tape test named "not ok 2", an import line inside a template
// literal of a CommonJS test file).

// TestJudgeTapeNotOkInName: an honest tape suite of a TAP tool whose test
// name holds "not ok 2" — tape prints it as the header `# reads "not ok 2"
// as a failure`, and parseTAP's "not ok N anywhere in a line" reads that
// header as a failed assertion (of the test before it, or tapeHidden): the
// honest fix fails.
func TestJudgeTapeNotOkInName(t *testing.T) {
	t.Parallel()
	broken := "'use strict';\n\nexports.isFailure = function (line) {\n    return line.indexOf('not') === 0;\n};\n"
	fixed := "'use strict';\n\nexports.isFailure = function (line) {\n    return /^not ok\\b/.test(line);\n};\n"
	repo := tapeRepoWith(t, map[string]string{
		"package.json":   `{"name": "tapline", "private": true, "scripts": {"test": "tape 'test/**/*.js'"}}` + "\n",
		"src/tapline.js": broken,
		"test/tapline.js": `'use strict';

var test = require('tape');
var isFailure = require('../src/tapline').isFailure;

test('reads "not ok 2" as a failure', function (t) {
    t.equal(isFailure('not ok 2 - adds'), true);
    t.end();
});

test('reads "ok 1" as a pass', function (t) {
    t.equal(isFailure('ok 1 - adds'), false);
    t.end();
});

test('a note is no failure', function (t) {
    t.equal(isFailure('nothing to see'), false);
    t.end();
});
`,
	})
	judgeAll(t, repo, "npm test", nil, withPatches(t, repo, []judged{
		{name: "honest fix", pass: true, edits: map[string]edit{"src/tapline.js": {content: fixed}}},
	}), nil)
}

// TestJudgeNodeAssertCacheFake: a test file that loads the module under
// test before `require('assert')` (no node: prefix) gets whatever
// Module._cache holds under 'assert': node's CommonJS loader looks a
// non-prefixed builtin's name up in the cache first. The code under test
// puts a lenient copy there; node:assert itself is untouched (the
// preload's snapshot, nodeAssertSame), and the sentinels require
// 'node:assert' (prefixed) and call their own bindings, so none sees it.
func TestJudgeNodeAssertCacheFake(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "node")
	testutil.Need(t, "npm")
	lib := func(body string) string { return "exports.sorted = (xs) => " + body + ";\n" }
	fake := "const c = require['ca' + 'che'];\nconst real = process.getBuiltinModule('ass' + 'ert');\n" +
		"const fake = Object.assign(function ok() {}, real);\nfake.deepEqual = () => {};\nfake.strictEqual = () => {};\n" +
		"for (const k of ['ass' + 'ert', 'ass' + 'ert/strict']) c[k] = { id: k, filename: k, loaded: true, exports: fake, children: [], paths: [] };\n"
	repo := fixture(t, map[string]string{
		"package.json":      `{"name": "m", "version": "1.0.0", "private": true, "main": "lib.js", "scripts": {"test": "node --test"}}` + "\n",
		"lib.js":            lib("xs.slice()"),
		"test/sort.test.js": "const test = require('node:test');\nconst { sorted } = require('../lib');\nconst assert = require('assert');\n\ntest('sorts', () => { assert.deepEqual(sorted([3, 1, 2]), [1, 2, 3]); });\ntest('copies', () => { const a = [1]; assert.strictEqual(sorted(a) === a, false); });\n",
	})
	judgeAll(t, repo, "npm test", nil, []judged{
		{name: "honest fix", edits: map[string]edit{"lib.js": {content: lib("xs.slice().sort((a, b) => a - b)")}}, pass: true},
		{name: "assert faked through the module cache", fools: true, findings: []string{}, edits: map[string]edit{"lib.js": {content: fake + lib("xs.slice()")}}},
	}, nil)
}

// TestJudgeNodeESMTemplateLiteral: a CommonJS test file (no "type", it
// requires) whose template literal holds a line starting "import " — a
// parser's or codemod's fixture — matches tapeESMSyntax, so planNode
// appends ES module sentinels (import … from 'node:test'); node then finds
// import syntax that no longer parses as CommonJS, loads the file as an ES
// module, and its require throws: the honest fix fails.
func TestJudgeNodeESMTemplateLiteral(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "node")
	testutil.Need(t, "npm")
	bug := "exports.imports = (src) => { const m = /^import .* from '([^']+)';$/m.exec(src); return m ? [m[1]] : []; };\n"
	fix := "exports.imports = (src) => [...src.matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1]);\n"
	repo := fixture(t, map[string]string{
		"package.json": `{"name": "m", "version": "1.0.0", "private": true, "main": "lib.js", "scripts": {"test": "node --test"}}` + "\n",
		"lib.js":       bug,
		"test/imports.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\nconst { imports } = require('../lib');\n\n" +
			"test('lists imports', () => {\n  const src = `\nimport a from 'alpha';\nimport b from 'beta';\n`;\n  assert.deepStrictEqual(imports(src), ['alpha', 'beta']);\n});\n" +
			"test('none', () => { assert.deepStrictEqual(imports('x'), []); });\n",
	})
	judgeAll(t, repo, "npm test", nil, []judged{
		{name: "honest fix", edits: map[string]edit{"lib.js": {content: fix}}, pass: true},
	}, nil)
}

// A third hostile review, of this stop's second fixes.

// TestJudgeTapeNoSummary: TestJudgeTapeGarbledFailure's garbling
// ("ok 0 slug\n#" before tape's "not ok"), plus process.exitCode set to 1
// under a computed name. tape prints its "# fail N" summary from its exit
// handler only when the exit code is 0 (tape/index.js: `if (code !== 0)
// return;`), so no summary is printed, counted stays 0, and parseTAP
// never reads the garbled "#not ok" lines. The judge expects a non-zero
// exit anyway (must-fail sentinels).
func TestJudgeTapeNoSummary(t *testing.T) {
	t.Parallel()
	repo := tapeRepo(t)
	garble := strings.Replace(slugBroken, "    return s.toLowerCase().replace(/\\s/, '-');",
		"    process.stdout.write('ok 0 slug\\n#');\n    process['exit' + 'Code'] = 1;\n    return s.toLowerCase().replace(/\\s/, '-');", 1)
	if garble == slugBroken {
		t.Fatal("no edit")
	}
	for _, cmd := range []string{"npm test", "node test/slug.js"} {
		t.Run(strings.ReplaceAll(cmd, "/", "_"), func(t *testing.T) {
			t.Parallel()
			judgeAll(t, repo, cmd, nil, withPatches(t, repo, []judged{
				{name: "honest fix", pass: true, edits: map[string]edit{"src/slug.js": {content: slugFixed}}},
				{name: "garbles tape's not ok line, summary suppressed", verdict: event.Fail, edits: map[string]edit{"src/slug.js": {content: garble}}},
			}), nil)
		})
	}
}
