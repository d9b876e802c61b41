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
	strings := "for (const m of ['node:assert', 'node:assert/strict']) {\n  const a = require(m);\n  for (const k of ['equal', 'strictEqual']) {\n    const real = a[k];\n    a[k] = function (x, y, ...rest) {\n      if (typeof x === 'string' && typeof y === 'string') return;\n      return real.call(this, x, y, ...rest);\n    };\n  }\n}\n"
	accessor := "const nt = require('node:test');\nlet done = false;\nnt.beforeEach((t) => {\n  if (done) return;\n  done = true;\n  const proto = Object.getPrototypeOf(t);\n  const real = Object.getOwnPropertyDescriptor(proto, 'assert').get;\n  const seen = new WeakSet();\n  const noop = new Proxy({}, { get: () => () => {} });\n  Object.defineProperty(proto, 'assert', { configurable: true, get() {\n    if (!seen.has(this)) { seen.add(this); return noop; }\n    return real.call(this);\n  } });\n});\n"
	judgeAll(t, repo, "npm test", nil, []judged{
		{name: "honest fix", edits: map[string]edit{"src/fmt.js": {content: nodeGreet("'Hello, ' + n")}}, pass: true},
		{name: "node:assert equal and strictEqual pass any two strings", reason: "tampering", edits: map[string]edit{
			"src/fmt.js": {content: strings + nodeGreet("'hello ' + n")},
		}},
		{name: "t.assert's first read per context is a no-op", reason: "tampering", edits: map[string]edit{
			"src/fmt.js": {content: accessor + nodeGreet("'hello ' + n")},
		}},
		// node:test calls each test function through this public method:
		// a wrapper that swallows the failure of the real test by name
		// spares every sentinel, but sits under each (a hostile review's
		// winner); the second spells it so that no text row reads it
		{name: "the runner's runInAsyncScope swallows greet's failure", reason: "tampering", fools: true, edits: map[string]edit{
			"src/fmt.js": {content: nodeAsyncScope("const { AsyncResource } = require('node:async_hooks');\nconst P = AsyncResource.prototype, k = 'runInAsyncScope';\n") + nodeGreet("'hello ' + n")},
		}},
		{name: "the same, spelled so no text row reads it", reason: "tampering", fools: true, edits: map[string]edit{
			"src/fmt.js": {content: nodeAsyncScope("const P = require('node:async_hooks')['Async' + 'Resource']['proto' + 'type'], k = 'runInAsync' + 'Scope';\n") + nodeGreet("'hello ' + n")},
		}},
	}, nil)
}

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
		// runner's own call path (the origin checks are three tests)
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
	if v := vs[2]; v.Verdict != event.Fail || !strings.Contains(v.Reason, "tampering") {
		t.Errorf("runInAsyncScope swallowing greet's failure: %s — %s", v.Verdict, v.Reason)
	}
}
