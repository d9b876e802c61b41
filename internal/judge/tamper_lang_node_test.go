package judge_test

import (
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
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
	}, nil)
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
