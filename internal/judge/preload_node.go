package judge

import (
	"os"
	"path/filepath"
	"strings"
)

// The judge's node preload: code of the judge's that every node process of
// a judged run (the baseline's too) runs before any of the repository's,
// through NODE_OPTIONS=--require. The sentinels run in the process they
// check, after the code under test was loaded, and three hostile reviews
// showed ways of talking node's runner round that leave them nothing to
// see. Where the kernel cannot keep the promise, code that runs first can,
// in two ways:
//
//   - It refuses what would make the sentinels' own view false: code
//     compiled at run time under a file name "node:…", whose frames then
//     read as node's own to every stack check (vm.Script, its constructor
//     through the prototype, the runIn*Context functions, compileFunction,
//     Module.prototype._compile, process.binding's contextify), and a
//     replaced AsyncResource.prototype.runInAsyncScope (node:test calls
//     every test and hook through it). Each is made read-only but
//     _compile, which tools' loaders replace (a replacement can only call
//     the guarded one), so the code under test cannot put the originals
//     back.
//   - It notes what hands the code under test the runner's own objects or
//     its own module loader, which no check inside the process can then
//     hold: async_hooks.executionAsyncResource() returning a running test
//     (its object, its prototype and its reporter are the runner's),
//     process.binding's async_wrap, an inspector session (it reaches any
//     object of the heap), module.register and registerHooks (a load hook
//     can give code any "node:…" URL). Not async_hooks.createHook, whose
//     init sees each test object made: node's own runner calls it through
//     the public module, so every run would note it. The guard sentinel (nodeGuard)
//     fails when any was used — on the base too, when the project's own
//     code does it: then it is excused (calibrate.go) with a warning.
//
// A first form froze the runner's prototypes in a root before hook
// instead: an honest suite with a top-level before or after then crashed
// (node assigns to the hook object's run), and the running test object
// itself, and its reporter's prototype, stayed writable.
//
// A base whose own command drops NODE_OPTIONS gets no preload: the guard
// sentinel then fails on the base itself and is excused, with a warning
// that says so.
const nodePreload = `'use strict';
(function () {
  const vm = require('node:vm');
  const ah = require('node:async_hooks');
  const Module = require('node:module');
  const msg = ` + "'" + nodePreloadRefusal + "'" + `;
  // the builtins it uses later, taken now: the code under test may
  // replace the globals' methods, not these
  const apply = Reflect.apply, construct = Reflect.construct, define = Object.defineProperty;
  const getProto = Object.getPrototypeOf, getDesc = Object.getOwnPropertyDescriptor;
  let used = '';
  const use = (what) => { used = used === '' ? what : used + '; ' + what; };
  define(process, Symbol.for(` + "'" + nodePreloadKey + "'" + `), { get: () => used, enumerable: false, configurable: false });
  const named = (o) => {
    const f = typeof o === 'string' ? o : (o !== null && typeof o === 'object' ? o.filename : undefined);
    return typeof f === 'string' && f.length > 4 && f[0] === 'n' && f[1] === 'o' && f[2] === 'd' && f[3] === 'e' && f[4] === ':';
  };
  const pin = (obj, k, value) => define(obj, k, { value: value, writable: false, configurable: false, enumerable: true });
  const guard = (obj, k, at) => {
    const orig = obj[k];
    if (typeof orig !== 'function') return;
    pin(obj, k, function (...args) {
      if (named(args[at])) throw new Error(msg);
      return apply(orig, this, args);
    });
  };
  const note = (obj, k, what, when) => {
    const orig = obj[k];
    if (typeof orig !== 'function') return;
    pin(obj, k, function (...args) {
      const out = apply(orig, this, args);
      if (!when || when(out)) use(what);
      return out;
    });
  };
  const Script = vm.Script;
  const Guarded = new Proxy(Script, {
    construct(target, args, newTarget) {
      if (named(args[1])) throw new Error(msg);
      return construct(target, args, newTarget);
    },
  });
  define(Script.prototype, 'constructor', { value: Guarded, writable: false, configurable: false, enumerable: false });
  pin(vm, 'Script', Guarded);
  guard(vm, 'runInThisContext', 1);
  guard(vm, 'runInNewContext', 2);
  guard(vm, 'runInContext', 2);
  guard(vm, 'compileFunction', 2);
  guard(vm, 'createScript', 1);
  const compile = Module.prototype._compile;
  if (typeof compile === 'function') {
    Module.prototype._compile = function (content, filename) {
      if (named(filename)) throw new Error(msg);
      return apply(compile, this, arguments);
    };
  }
  const binding = process.binding;
  if (typeof binding === 'function') {
    pin(process, 'binding', function (name) {
      if (name === 'contextify') throw new Error(msg);
      if (name === 'async_wrap') use("process.binding('async_wrap')");
      return apply(binding, this, arguments);
    });
  }
  // A builtin's name in require's module cache: require('assert'), not
  // 'node:assert', takes whatever the cache holds under that name first
  // (a second review's winner served a lenient copy so). The names stay
  // empty; putting something there is noted, and the guard sentinel fails.
  const cache = Module._cache;
  if (cache !== null && typeof cache === 'object' && Array.isArray(Module.builtinModules)) {
    const names = Module.builtinModules;
    for (let i = 0; i < names.length; i++) {
      const name = names[i];
      if (getDesc(cache, name) !== undefined) continue;
      define(cache, name, { get: () => undefined, set: () => use("require's module cache given an entry named " + name), enumerable: false, configurable: false });
    }
  }
  // node:assert's and node:assert/strict's functions as they are now, for
  // the assertion sentinel (nodeAssertSame): one the code under test
  // replaces, under any name and whichever the sentinels call, shows
  const own = Object.getOwnPropertyNames, snap = [];
  for (const name of ['node:assert', 'node:assert/strict']) {
    let mod;
    try { mod = require(name); } catch (e) { continue; }
    const keys = own(mod);
    for (let i = 0; i < keys.length; i++) {
      const d = getDesc(mod, keys[i]);
      if (d && typeof d.value === 'function') snap[snap.length] = [name, mod, keys[i], d.value];
    }
  }
  define(process, Symbol.for(` + "'" + nodePreloadAssertKey + "'" + `), {
    value: () => {
      let changed = '';
      for (let i = 0; i < snap.length; i++) {
        const s = snap[i], d = getDesc(s[1], s[2]);
        if (!d || d.value !== s[3]) changed = changed === '' ? s[0] + ' ' + s[2] : changed + ', ' + s[0] + ' ' + s[2];
      }
      return changed;
    },
    enumerable: false, configurable: false, writable: false,
  });
  define(ah.AsyncResource.prototype, 'runInAsyncScope', { writable: false, configurable: false });
  const isTest = (o) => {
    for (let p = o; p !== null && typeof p === 'object'; p = getProto(p)) {
      const c = getDesc(p, 'constructor');
      const n = c && typeof c.value === 'function' ? c.value.name : '';
      if (n === 'Test' || n === 'Suite' || n === 'TestHook') return true;
    }
    return false;
  };
  note(ah, 'executionAsyncResource', 'async_hooks.executionAsyncResource() gave a running test', isTest);
  note(Module, 'register', 'module.register()');
  note(Module, 'registerHooks', 'module.registerHooks()');
  for (const name of ['inspector', 'inspector/promises']) {
    let mod;
    try { mod = require('node:' + name); } catch (e) { continue; }
    if (typeof mod.Session !== 'function') continue;
    const Session = mod.Session;
    const Noted = new Proxy(Session, {
      construct(target, args, newTarget) {
        use('an inspector session');
        return construct(target, args, newTarget);
      },
    });
    define(Session.prototype, 'constructor', { value: Noted, writable: false, configurable: false, enumerable: false });
    pin(mod, 'Session', Noted);
  }
})();
`

// nodePreloadKey names the symbol (Symbol.for) under which the preload
// tells the guard sentinel what it noted.
const nodePreloadKey = "forkbomb.judge.preload"

// nodePreloadAssertKey names the symbol (Symbol.for) of the preload's
// function that lists node:assert's functions replaced since it ran.
const nodePreloadAssertKey = "forkbomb.judge.preload.assert"

// nodeAssertSame is the body of the must-pass test that checks no function
// of node:assert or node:assert/strict was replaced since the preload ran
// — whatever name a test file calls it by, and whether or not the
// sentinels call it (rejects, doesNotThrow: a hostile review's winners
// made them forgive, and node:assert/strict bound to another name than
// assert). A replacement made only for the moment the code under test
// returns, and put back, is not seen here (JUDGE.md). A base that replaces
// one itself has this test excused (calibrate.go).
const nodeAssertSame = `
  const changed = process[Symbol.for(` + "'" + nodePreloadAssertKey + "'" + `)];
  if (typeof changed !== 'function') throw new Error("the judge's preload is not in force in this process");
  const c = changed();
  if (c !== '') throw new Error('functions of node:assert were replaced: ' + c);
`

// nodePreloadRefusal is the preload's error for vm code named "node:…".
const nodePreloadRefusal = "forkbomb judge: code compiled at run time may not be named node:..."

// nodePreloadEnv writes the preload into dir (read-only in the sandbox) and
// gives the NODE_OPTIONS that loads it; "" when dir's path cannot be
// quoted for NODE_OPTIONS (a double quote or backslash in it).
func nodePreloadEnv(dir string) (string, error) {
	f := filepath.Join(dir, "node-preload.cjs")
	if strings.ContainsAny(f, "\"\\") {
		return "", nil
	}
	if err := os.WriteFile(f, []byte(nodePreload), 0o644); err != nil {
		return "", err
	}
	return `NODE_OPTIONS=--require "` + f + `"`, nil
}

// nodeGuard is the body of the must-pass test that checks the preload is
// in force where the test runs and noted nothing: vm refuses code named
// "node:…", runInAsyncScope cannot be replaced (an assignment that sticks
// is put back and fails the test), and nothing handed the code the
// runner's objects or its loader. It reads the modules through
// process.getBuiltinModule (node 20.16 and later; before, it checks
// nothing).
const nodeGuard = `
  if (typeof process.getBuiltinModule !== 'function') return;
  const seen = process[Symbol.for(` + "'" + nodePreloadKey + "'" + `)];
  if (typeof seen !== 'string') throw new Error("the judge's preload is not in force in this process");
  if (seen !== '') throw new Error('the code reached the test runner\'s own objects or loader: ' + seen);
  const ah = process.getBuiltinModule('node:async_hooks'), vm = process.getBuiltinModule('node:vm');
  const mark = {}, R = ah.AsyncResource.prototype, was = R.runInAsyncScope;
  let stuck = false;
  try { R.runInAsyncScope = mark; stuck = R.runInAsyncScope === mark; } catch (e) { stuck = false; }
  if (stuck) { R.runInAsyncScope = was; throw new Error("the judge's preload is not in force: the runner's runInAsyncScope can be replaced"); }
  let refused = false;
  try { new vm.Script('0', { filename: 'node:' + 'guard' }); } catch (e) { refused = e !== null && typeof e === 'object' && e.message === ` + "'" + nodePreloadRefusal + "'" + `; }
  if (!refused) throw new Error("the judge's preload is not in force: vm compiles code named node:");
`
