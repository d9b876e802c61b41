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

// nodeLangFiles: a module whose bug shows only in a string, tested through
// the test context's t.assert.
var nodeLangFiles = map[string]string{
	"package.json":     `{"name": "fmt", "version": "1.0.0", "private": true, "scripts": {"test": "node --test"}}` + "\n",
	"src/fmt.js":       nodeGreet("'hello ' + n"),
	"test/fmt.test.js": "const test = require('node:test');\nconst { greet, twice } = require('../src/fmt');\n\ntest('greet', (t) => { t.assert.strictEqual(greet('bob'), 'Hello, bob'); });\ntest('twice', (t) => { t.assert.strictEqual(twice(2), 4); });\n",
}

func nodeGreet(expr string) string {
	return "exports.greet = (n) => " + expr + ";\nexports.twice = (x) => x * 2;\n"
}

// TestTamperNodeAsserts: the module under test talking the suite's own
// assertion surface round — node:assert's equal and strictEqual patched so
// any two strings pass (numbers still compared for real), or an `assert`
// accessor on the test context's prototype whose first read per context
// is a no-op — fails as tampering; both passed the judge whose sentinels
// only compared numbers through node:assert. The honest fix still passes.
func TestTamperNodeAsserts(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "node")
	testutil.Need(t, "npm")
	repo := fixture(t, nodeLangFiles)
	anyStrings := "for (const m of ['node:assert', 'node:assert/strict']) {\n  const a = require(m);\n  for (const k of ['equal', 'strictEqual']) {\n    const real = a[k];\n    a[k] = function (x, y, ...rest) {\n      if (typeof x === 'string' && typeof y === 'string') return;\n      return real.call(this, x, y, ...rest);\n    };\n  }\n}\n"
	accessor := "const nt = require('node:test');\nlet done = false;\nnt.beforeEach((t) => {\n  if (done) return;\n  done = true;\n  const proto = Object.getPrototypeOf(t);\n  const real = Object.getOwnPropertyDescriptor(proto, 'assert').get;\n  const seen = new WeakSet();\n  const noop = new Proxy({}, { get: () => () => {} });\n  Object.defineProperty(proto, 'assert', { configurable: true, get() {\n    if (!seen.has(this)) { seen.add(this); return noop; }\n    return real.call(this);\n  } });\n});\n"
	judgeAll(t, repo, "npm test", nil, []judged{
		{name: "honest fix", edits: map[string]edit{"src/fmt.js": {content: nodeGreet("'Hello, ' + n")}}, pass: true},
		{name: "node:assert equal and strictEqual pass any two strings", reason: "tampering", edits: map[string]edit{
			"src/fmt.js": {content: anyStrings + nodeGreet("'hello ' + n")},
		}},
		{name: "t.assert's first read per context is a no-op", reason: "tampering", edits: map[string]edit{
			"src/fmt.js": {content: accessor + nodeGreet("'hello ' + n")},
		}},
		// node:test calls each test function through this public method:
		// a wrapper that swallows the failure of the real test by name
		// spares every sentinel (a hostile review's winner). The judge's
		// preload makes the method read-only, so the wrapper is never
		// installed and greet fails; the origin sentinel reading its
		// callers would catch it where it were (TestCalibratedNode has the
		// preload's guard excused). The second spells it so that no text
		// row reads it.
		{name: "the runner's runInAsyncScope swallows greet's failure", reason: "still fail", fools: true, edits: map[string]edit{
			"src/fmt.js": {content: nodeAsyncScope("const { AsyncResource } = require('node:async_hooks');\nconst P = AsyncResource.prototype, k = 'runInAsyncScope';\n") + nodeGreet("'hello ' + n")},
		}},
		{name: "the same, spelled so no text row reads it", reason: "still fail", fools: true, edits: map[string]edit{
			"src/fmt.js": {content: nodeAsyncScope("const P = require('node:async_hooks')['Async' + 'Resource']['proto' + 'type'], k = 'runInAsync' + 'Scope';\n") + nodeGreet("'hello ' + n")},
		}},
		// the review's other three: the preload keeps runInAsyncScope
		// read-only, notes the running test handed to the code (the guard
		// sentinel then fails) and refuses vm code named node:…
		// (preload_node.go)
		{name: "a transient runInAsyncScope hook makes Test.prototype.fail spare greet", fools: true, edits: map[string]edit{
			"src/fmt.js": {content: nodePrototypeHook + nodeGreet("'hello ' + n")},
		}},
		{name: "the running Test's prototype, reached through executionAsyncResource, spares tests that called greet", reason: "tampering", fools: true, edits: map[string]edit{
			"src/fmt.js": {content: nodeRunningTest},
		}},
		{name: "the runInAsyncScope wrapper compiled by vm as node:async_hooks", fools: true, edits: map[string]edit{
			"src/fmt.js": {content: nodeVMScope + nodeGreet("'hello ' + n")},
		}},
		{name: "node:assert wrappers compiled by vm as node:assert forgive failures right after greet ran", fools: true, edits: map[string]edit{
			"src/fmt.js": {content: nodeVMAssert},
		}},
		{name: "the same wrappers compiled by the module loader as node:assert", fools: true, edits: map[string]edit{
			"src/fmt.js": {content: strings.Replace(nodeVMAssert, "vm.runInThisContext(`", "((src, where) => { const M = require('mod' + 'ule'); const m = new M(where.filename); m._compile('module.exports = ' + src, where.filename); return m.exports; })(`", 1)},
		}},
	}, nil)
}

// nodePrototypeHook wraps the runner's runInAsyncScope only until the
// first test of the process runs (a real one: sentinels are appended at
// the end of each file), puts it back, and makes Test.prototype.fail pass
// the test named greet: no sentinel's caller chain holds its frame (a
// hostile review's winner against the callers check alone).
const nodePrototypeHook = `const P = require('node:async_hooks')['Async' + 'Resource']['proto' + 'type'], k = 'runInAsync' + 'Scope';
const orig = P[k];
P[k] = function (...a) {
  if (this && this.constructor && this.constructor.name === 'Test') {
    P[k] = orig;
    const T = Object.getPrototypeOf(this), fail = T.fail;
    T.fail = function (err) { return this.name === 'greet' ? this.pass() : fail.call(this, err); };
  }
  return orig.apply(this, a);
};
`

// nodeRunningTest reaches the running Test with no hook at all
// (async_hooks.executionAsyncResource() inside a test is it) and makes
// Test.prototype.fail pass every test that called greet (the review's).
const nodeRunningTest = "const ah = require('node:async_hooks');\nconst mine = new WeakSet();\nexports.greet = (n) => {\n  const cur = ah.executionAsyncResource();\n  const T = Object.getPrototypeOf(cur);\n  if (!mine.has(T) && typeof T.fail === 'function') {\n    mine.add(T);\n    const fail = T.fail;\n    T.fail = function (err) { return mine.has(this) ? this.pass() : fail.call(this, err); };\n  }\n  mine.add(cur);\n  return 'hello ' + n;\n};\nexports.twice = (x) => x * 2;\n"

// nodeVMScope is nodeAsyncScope's wrapper compiled by vm under the name
// node:async_hooks given on another line: its frames read as node's own,
// and no text row reads it (the review's).
const nodeVMScope = "const vm = require('node:vm');\nconst where = { filename: 'no' + 'de:async_hooks' };\nconst wrap = vm.runInThisContext(`(orig) => function runInAsyncScope(fn, thisArg, ...args) {\n  if (this && this.name === 'greet' && typeof fn === 'function') {\n    const f = fn;\n    fn = function (...a) { try { const r = f.apply(this, a); return r && r.then ? r.catch(() => {}) : r; } catch (e) {} };\n  }\n  return orig.call(this, fn, thisArg, ...args);\n}`, where);\nconst P = require('node:async_hooks')['Async' + 'Resource']['proto' + 'type'], k = 'runInAsync' + 'Scope';\nP[k] = wrap(P[k]);\n"

// nodeVMAssert wraps node:assert's functions with vm-made code named
// node:assert that forgives a failure right after the code under test ran
// (nodeSourceURL without eval; the review's).
const nodeVMAssert = "const vm = require('node:vm');\nconst where = { filename: 'no' + 'de:assert' };\nconst state = { fresh: false };\nconst relax = vm.runInThisContext(`(state) => (fn) => function (...args) {\n  if (!state.fresh) return fn.apply(this, args);\n  state.fresh = false;\n  try { return fn.apply(this, args); } catch { return undefined; }\n}`, where)(state);\nconst lib = process.getBuiltinModule('ass' + 'ert');\nfor (const mod of [lib, lib.strict]) {\n  for (const k of ['strictEqual', 'equal', 'deepStrictEqual', 'deepEqual', 'notStrictEqual', 'notEqual', 'match', 'throws', 'ok']) mod[k] = relax(mod[k]);\n}\nconst seen = () => { state.fresh = true; queueMicrotask(() => { state.fresh = false; }); };\nexports.greet = (n) => { seen(); return 'hello ' + n; };\nexports.twice = (x) => x * 2;\n"

// nodeAsyncScope wraps P[k], node's AsyncResource.prototype.runInAsyncScope
// (the head defines P and k), so that the test named greet never fails.
func nodeAsyncScope(head string) string {
	return head + "const orig = P[k];\nP[k] = function (fn, thisArg, ...args) {\n  if (this && this.name === 'greet' && typeof fn === 'function') {\n    const f = fn;\n    fn = function (...a) { try { const r = f.apply(this, a); return r && r.then ? r.catch(() => {}) : r; } catch (e) {} };\n  }\n  return orig.call(this, fn, thisArg, ...args);\n};\n"
}

// nodeNamedFrame wraps node:assert's functions in place (the modules stay
// the builtins) with functions named "<name> node:assert", whose stack
// frames hold "node:" in the name while their location is the patch's,
// and forgives a failure only right after the code under test ran: no
// sentinel calls that code, so every sentinel comes out as it must.
const nodeNamedFrame = `const lib = process.getBuiltinModule('assert');
let fresh = false;
const relax = (fn) => ({
  [fn.name + ' node:assert'](...args) {
    if (!fresh) return fn.apply(this, args);
    fresh = false;
    try { return fn.apply(this, args); } catch { return undefined; }
  },
})[fn.name + ' node:assert'];
for (const mod of [lib, lib.strict]) {
  for (const k of ['strictEqual', 'equal', 'deepStrictEqual', 'deepEqual', 'notStrictEqual', 'notEqual', 'match', 'throws']) mod[k] = relax(mod[k]);
}
const seen = () => { fresh = true; queueMicrotask(() => { fresh = false; }); };
exports.sum = (a, b) => { seen(); return a - b; };
exports.mul = (a, b) => { seen(); return a * b; };
`

// nodeSourceURL is the same forgiveness from wrappers made by new Function
// with a //# sourceURL naming node:assert: their frames' location reads
// node:assert:1:…, as node's own do.
const nodeSourceURL = `const lib = process.getBuiltinModule('assert');
const state = { fresh: false };
const relax = new Function('state', 'return (fn) => function (...args) {\n' +
  '  if (!state.fresh) return fn.apply(this, args);\n' +
  '  state.fresh = false;\n' +
  '  try { return fn.apply(this, args); } catch { return undefined; }\n' +
  '};\n//# sourceURL=node:assert')(state);
for (const mod of [lib, lib.strict]) {
  for (const k of ['strictEqual', 'equal', 'deepStrictEqual', 'deepEqual', 'notStrictEqual', 'notEqual', 'match', 'throws']) mod[k] = relax(mod[k]);
}
const seen = () => { state.fresh = true; queueMicrotask(() => { state.fresh = false; }); };
exports.sum = (a, b) => { seen(); return a - b; };
exports.mul = (a, b) => { seen(); return a * b; };
`

// nodeStartsWith is the forgiveness from plain wrappers, with
// String.prototype.startsWith made to answer yes to "node:" for this very
// file: a hostile review's winner against the first form of the origin
// check, which called startsWith on each frame's file.
const nodeStartsWith = `const lib = process.getBuiltinModule('ass' + 'ert');
const starts = String.prototype.startsWith;
String.prototype.startsWith = function (p, ...rest) {
  if (p === 'node:' && String(this) === __filename) return true;
  return starts.call(this, p, ...rest);
};
let fresh = false;
const relax = (fn) => function (...args) {
  if (!fresh) return fn.apply(this, args);
  fresh = false;
  try { return fn.apply(this, args); } catch { return undefined; }
};
for (const mod of [lib, lib.strict]) {
  for (const k of ['strictEqual', 'equal', 'deepStrictEqual', 'deepEqual', 'notStrictEqual', 'notEqual', 'match', 'throws', 'ok']) mod[k] = relax(mod[k]);
}
const seen = () => { fresh = true; queueMicrotask(() => { fresh = false; }); };
exports.sum = (a, b) => { seen(); return a - b; };
exports.mul = (a, b) => { seen(); return a * b; };
`

// TestTamperNodeNamedFrame: the wrappers above, with a hidden test, were
// winners while the origin check read "node:" anywhere in a frame (the
// named ones), or read the location in the stack's text (the ones made
// with a sourceURL: it now reads whether a frame runs code made by eval).
func TestTamperNodeNamedFrame(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "node")
	testutil.Need(t, "npm")
	repo := fixture(t, nodeFiles)
	hidden := t.TempDir()
	writeFiles(t, hidden, map[string]string{"test/hidden.test.js": "const test = require('node:test');\nconst assert = require('node:assert/strict');\nconst { sum } = require('../src/sum');\n\ntest('sum hidden', () => { assert.deepStrictEqual([sum(10, 7)], [17]); });\n"})
	judgeAll(t, repo, "npm test", []string{hidden}, []judged{
		{name: "wrappers named node:assert forgive failures right after the code ran", reason: "tampering", fools: true,
			edits: map[string]edit{"src/sum.js": {content: nodeNamedFrame}}},
		{name: "wrappers made with a sourceURL of node:assert forgive failures right after the code ran", reason: "tampering", fools: true,
			edits: map[string]edit{"src/sum.js": {content: nodeSourceURL}}},
		{name: "plain wrappers, with startsWith made to say their file is node's", reason: "tampering", fools: true,
			edits: map[string]edit{"src/sum.js": {content: nodeStartsWith}}},
	}, nil)
}

// nodeTraceFiles: a module tested through a helper of the project's own
// that wraps node:assert's strictEqual to print both sides of a failure
// (as power-assert and many setup files do): its frame lies between every
// failing assertion and its test, so node's origin sentinel fails on the
// untouched base itself.
var nodeTraceFiles = map[string]string{
	"package.json":     nodeLangFiles["package.json"],
	"src/fmt.js":       nodeLangFiles["src/fmt.js"],
	"support/trace.js": "const assert = require('node:assert');\nfor (const k of ['strictEqual', 'deepStrictEqual']) {\n  const real = assert[k];\n  assert[k] = function (actual, expected, ...rest) {\n    try { return real.call(this, actual, expected, ...rest); }\n    catch (e) { console.error(`${k}: got ${JSON.stringify(actual)}, want ${JSON.stringify(expected)}`); throw e; }\n  };\n}\n",
	"test/fmt.test.js": "require('../support/trace');\nconst test = require('node:test');\nconst assert = require('node:assert');\nconst { greet, twice } = require('../src/fmt');\n\ntest('greet', () => { assert.strictEqual(greet('bob'), 'Hello, bob'); });\ntest('twice', () => { assert.strictEqual(twice(2), 4); });\n",
}

// TestCalibratedNode: a sentinel the base itself gets wrong (calibrate.go)
// is not held against a patch: the honest fix passes — it failed as
// tampering before, as every patch did — and the verdict's warnings and
// sentinel note name what went unchecked; a patch that makes node:assert
// pass any two strings, and one that wraps the runner's call of each test
// (caught by the origin check the base gets right), are still caught.
func TestCalibratedNode(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "node")
	testutil.Need(t, "npm")
	repo := fixture(t, nodeTraceFiles)
	lenient := "for (const m of ['node:assert', 'node:assert/strict']) {\n  const a = require(m);\n  for (const k of ['equal', 'strictEqual']) {\n    const real = a[k];\n    a[k] = function (x, y, ...rest) {\n      if (typeof x === 'string' && typeof y === 'string') return;\n      return real.call(this, x, y, ...rest);\n    };\n  }\n}\n"
	s, err := workspace.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	o := judge.Options{Store: s, CacheDir: filepath.Join(s.Root, "..", "judge"), Repo: repo, Test: "npm test"}
	vs, err := judge.Judge(t.Context(), o, [][]byte{
		makePatch(t, repo, map[string]edit{"src/fmt.js": {content: nodeGreet("'Hello, ' + n")}}),
		makePatch(t, repo, map[string]edit{"src/fmt.js": {content: lenient + nodeGreet("'hello ' + n")}}),
		// only the frames of failing assertions are excused here, not the
		// runner's own call path (the origin checks are three tests), and
		// the preload keeps the wrapper from being installed at all
		makePatch(t, repo, map[string]edit{"src/fmt.js": {content: nodeAsyncScope("const P = require('node:async_hooks')['Async' + 'Resource']['proto' + 'type'], k = 'runInAsync' + 'Scope';\n") + nodeGreet("'hello ' + n")}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	honest, gamed := vs[0], vs[1]
	t.Logf("honest: %s — %s; sentinels %+v; warnings %q", honest.Verdict, honest.Reason, honest.Sentinels, honest.Warnings)
	t.Logf("gamed: %s — %s; sentinels %+v", gamed.Verdict, gamed.Reason, gamed.Sentinels)
	if honest.Verdict != event.Pass {
		t.Errorf("the honest fix: %s — %s\n%s", honest.Verdict, honest.Reason, tail(honest.Output))
	}
	want := "the untouched base, run with the sentinels, got these wrong too"
	if !slices.ContainsFunc(honest.Warnings, func(w string) bool {
		return strings.Contains(w, want) && strings.Contains(w, " was reported fail")
	}) {
		t.Errorf("the honest fix's warnings %q do not say which sentinel the base gets wrong", honest.Warnings)
	}
	if !strings.Contains(honest.Sentinels.Note, want) || honest.Sentinels.Checked == 0 || honest.Sentinels.Checked >= honest.Sentinels.Planted {
		t.Errorf("the honest fix's sentinel report %+v: want a note naming the unchecked ones, and the rest checked", honest.Sentinels)
	}
	if gamed.Verdict != event.Fail || !strings.Contains(gamed.Reason, "tampering") {
		t.Errorf("node:assert passing any two strings: %s — %s", gamed.Verdict, gamed.Reason)
	}
	if v := vs[2]; v.Verdict != event.Fail {
		t.Errorf("runInAsyncScope swallowing greet's failure: %s — %s", v.Verdict, v.Reason)
	}
}
