package judge_test

import (
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// nodeOwnFail reaches the running Test through
// async_hooks.executionAsyncResource() and gives that object a fail of its
// own that passes (a third hostile review's winner against a preload that
// froze the runner's prototypes only).
const nodeOwnFail = `const ah = require('node:async_hooks');
exports.greet = (n) => {
  const cur = ah.executionAsyncResource();
  const pass = cur.pass;
  Object.defineProperty(cur, 'fail', { value: function () { return pass.call(this); }, configurable: true });
  return 'hello ' + n;
};
exports.twice = (x) => x * 2;
`

// nodeReporterFail reaches the runner's reporter the same way and makes its
// prototype's fail report greet as ok (the review's).
const nodeReporterFail = `const ah = require('node:async_hooks');
exports.greet = (n) => {
  const cur = ah.executionAsyncResource();
  const r = cur.reporter, P = Object.getPrototypeOf(r), fail = P.fail;
  if (!P.__x) { P.__x = 1; P.fail = function (nesting, loc, num, name, ...rest) { return name === 'greet' ? this.ok(nesting, loc, num, name, ...rest) : fail.call(this, nesting, loc, num, name, ...rest); }; }
  return 'hello ' + n;
};
exports.twice = (x) => x * 2;
`

// nodeLoadHook registers a module load hook that serves node:assert
// wrappers, forgiving a failure right after greet ran, from a "node:…" URL
// of its own: their frames read as node's, not eval (the review's, on an
// ES module suite).
const nodeLoadHook = `const M = process.getBuiltinModule('mod' + 'ule');
M['regi' + 'ster']('data:text/javascript,' + encodeURIComponent(` + "`" + `
export async function resolve(s, c, n) { return s === 'zz:w' ? { url: 'no' + 'de:internal/assert/x', format: 'module', shortCircuit: true } : n(s, c); }
export async function load(u, c, n) { return u === 'no' + 'de:internal/assert/x' && c.format === 'module' ? { format: 'module', shortCircuit: true, source: 'export const relax = (state) => (fn) => function (...args) { if (!state.fresh) return fn.apply(this, args); state.fresh = false; try { return fn.apply(this, args); } catch { return undefined; } };' } : n(u, c); }
` + "`" + `));
const state = { fresh: false };
const { relax } = await import('zz:w');
const lib = process.getBuiltinModule('ass' + 'ert');
for (const mod of [lib, lib.strict]) {
  for (const k of ['strictEqual', 'equal', 'deepStrictEqual', 'deepEqual', 'notStrictEqual', 'notEqual', 'match', 'throws', 'ok']) mod[k] = relax(state)(mod[k]);
}
const seen = () => { state.fresh = true; queueMicrotask(() => { state.fresh = false; }); };
export const greet = (n) => { seen(); return 'hello ' + n; };
export const twice = (x) => x * 2;
`

func nodeESMGreet(expr string) string {
	return "export const greet = (n) => " + expr + ";\nexport const twice = (x) => x * 2;\n"
}

// TestNodePreload: what the judge's preload (preload_node.go) notes — the
// runner's running test handed to the code under test, a module load hook
// registered — fails the patch as tampering through the guard sentinel,
// and an honest suite with a root before and after hook (which a first
// form of the preload broke, freezing the hook's prototype) passes.
func TestNodePreload(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "node")
	testutil.Need(t, "npm")
	t.Run("cjs", func(t *testing.T) {
		t.Parallel()
		files := map[string]string{}
		for k, v := range nodeLangFiles {
			files[k] = v
		}
		files["test/fmt.test.js"] = "const { test, before, after } = require('node:test');\nconst { greet, twice } = require('../src/fmt');\nlet n = 0;\nbefore(() => { n = 1; });\nafter(() => { n = 0; });\n\ntest('greet', (t) => { n++; t.assert.strictEqual(greet('bob'), 'Hello, bob'); });\ntest('twice', (t) => { t.assert.strictEqual(twice(2), 4); });\n"
		repo := fixture(t, files)
		judgeAll(t, repo, "npm test", nil, []judged{
			{name: "honest fix, with root before and after hooks", edits: map[string]edit{"src/fmt.js": {content: nodeGreet("'Hello, ' + n")}}, pass: true},
			{name: "the running Test given a fail of its own that passes", reason: "tampering", fools: true, edits: map[string]edit{"src/fmt.js": {content: nodeOwnFail}}},
			{name: "the reporter's fail reports greet as ok", reason: "tampering", fools: true, edits: map[string]edit{"src/fmt.js": {content: nodeReporterFail}}},
		}, nil)
	})
	t.Run("esm", func(t *testing.T) {
		t.Parallel()
		repo := fixture(t, map[string]string{
			"package.json":      nodeLangFiles["package.json"],
			"src/fmt.mjs":       nodeESMGreet("'hello ' + n"),
			"test/fmt.test.mjs": "import test from 'node:test';\nimport assert from 'node:assert/strict';\nimport { greet, twice } from '../src/fmt.mjs';\n\ntest('greet', () => { assert.strictEqual(greet('bob'), 'Hello, bob'); });\ntest('twice', () => { assert.strictEqual(twice(2), 4); });\n",
		})
		judgeAll(t, repo, "npm test", nil, []judged{
			{name: "honest fix", edits: map[string]edit{"src/fmt.mjs": {content: nodeESMGreet("'Hello, ' + n")}}, pass: true},
			{name: "assert wrappers served from a node: URL by a load hook", reason: "tampering", fools: true, edits: map[string]edit{"src/fmt.mjs": {content: nodeLoadHook}}},
		}, nil)
	})
}
