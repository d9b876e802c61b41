package judge

import (
	"os"
	"path/filepath"
	"strings"
)

// The judge's node preload: code of the judge's that every node process of
// a judged run (the baseline's too) runs before any of the repository's,
// through NODE_OPTIONS=--require. The sentinels run in the process they
// check, after the code under test was loaded, and a hostile review showed
// three ways of talking node's runner round that leave them nothing to
// see: wrap AsyncResource.prototype.runInAsyncScope (node:test calls every
// test and hook through it) only until the first real test, and have it
// patch the runner's Test.prototype.fail there; reach that prototype with
// no hook at all (async_hooks.executionAsyncResource() inside a test is
// the running Test); or compile a wrapper with vm under a file name
// "node:…", whose frames then read as node's own to every check of the
// stack. Where the kernel cannot keep the promise, code that runs first
// can: the preload makes runInAsyncScope read-only, freezes the prototypes
// of the runner's Test objects before the first test of each test file
// (a root before hook, registered before the file's own code runs; node
// names its test files' processes by NODE_TEST_CONTEXT), refuses vm code
// named "node:…" (vm.Script, its constructor through the prototype, the
// runIn*Context functions, compileFunction, Module.prototype._compile) and
// process.binding's contextify, which compiles it without vm — each made
// read-only but _compile, which tools' loaders replace (a replacement can
// only call the guarded one), so the code under test cannot put the
// originals back. The guard sentinel
// (nodeGuard) checks it is in force.
//
// A base whose own command drops NODE_OPTIONS gets no preload: the guard
// sentinel then fails on the base itself and is excused (calibrate.go),
// with a warning that says so.
const nodePreload = `'use strict';
(function () {
  const vm = require('node:vm');
  const ah = require('node:async_hooks');
  const msg = ` + "'" + nodePreloadRefusal + "'" + `;
  const named = (o) => {
    const f = typeof o === 'string' ? o : (o !== null && typeof o === 'object' ? o.filename : undefined);
    return typeof f === 'string' && f.slice(0, 5) === 'node:';
  };
  const pin = (obj, k, value) => Object.defineProperty(obj, k, { value: value, writable: false, configurable: false, enumerable: true });
  const guard = (obj, k, at) => {
    const orig = obj[k];
    if (typeof orig !== 'function') return;
    pin(obj, k, function (...args) {
      if (named(args[at])) throw new Error(msg);
      return Reflect.apply(orig, this, args);
    });
  };
  const Script = vm.Script;
  const Guarded = new Proxy(Script, {
    construct(target, args, newTarget) {
      if (named(args[1])) throw new Error(msg);
      return Reflect.construct(target, args, newTarget);
    },
  });
  Object.defineProperty(Script.prototype, 'constructor', { value: Guarded, writable: false, configurable: false, enumerable: false });
  pin(vm, 'Script', Guarded);
  guard(vm, 'runInThisContext', 1);
  guard(vm, 'runInNewContext', 2);
  guard(vm, 'runInContext', 2);
  guard(vm, 'compileFunction', 2);
  guard(vm, 'createScript', 1);
  const binding = process.binding;
  if (typeof binding === 'function') {
    pin(process, 'binding', function (name) {
      if (name === 'contextify') throw new Error(msg);
      return Reflect.apply(binding, this, arguments);
    });
  }
  // Module.prototype._compile names a module's code as it compiles it;
  // loaders of tools replace it, so it stays writable, but its replacement
  // can only call this one
  const Module = require('node:module');
  const compile = Module.prototype._compile;
  if (typeof compile === 'function') {
    Module.prototype._compile = function (content, filename) {
      if (named(filename)) throw new Error(msg);
      return Reflect.apply(compile, this, arguments);
    };
  }
  const R = ah.AsyncResource.prototype;
  Object.defineProperty(R, 'runInAsyncScope', { writable: false, configurable: false });
  if (process.env.NODE_TEST_CONTEXT) {
    require('node:test').before(function () {
      for (let p = Object.getPrototypeOf(ah.executionAsyncResource()); p !== null && p !== Object.prototype; p = Object.getPrototypeOf(p)) Object.freeze(p);
    });
  }
})();
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
// in force where the test runs: runInAsyncScope and the running test's
// prototypes cannot be replaced (an assignment that sticks is put back and
// fails the test), and vm refuses code named "node:…". It reads the
// modules through process.getBuiltinModule (node 20.16 and later; before,
// it checks nothing).
const nodeGuard = `
  if (typeof process.getBuiltinModule !== 'function') return;
  const ah = process.getBuiltinModule('node:async_hooks'), vm = process.getBuiltinModule('node:vm');
  const mark = {};
  const sticks = (o, k) => {
    const was = o[k];
    try { o[k] = mark; } catch (e) { return false; }
    if (o[k] !== mark) return false;
    o[k] = was;
    return true;
  };
  if (sticks(ah.AsyncResource.prototype, 'runInAsyncScope')) throw new Error("the judge's preload is not in force: the runner's runInAsyncScope can be replaced");
  for (let p = Object.getPrototypeOf(ah.executionAsyncResource()); p !== null && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    if (sticks(p, 'fail')) throw new Error("the judge's preload is not in force: the running test's prototype can be changed");
  }
  let refused = false;
  try { new vm.Script('0', { filename: 'node:' + 'guard' }); } catch (e) { refused = e !== null && typeof e === 'object' && e.message === ` + "'" + nodePreloadRefusal + "'" + `; }
  if (!refused) throw new Error("the judge's preload is not in force: vm compiles code named node:");
`
