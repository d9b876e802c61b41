package mutant_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/lab/mutant"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

const jsLib = `'use strict';
// clamp keeps x within [lo, hi].
function clamp(x, lo, hi) {
  if (x < lo) { return lo; }
  if (x > hi) { return hi; }
  return x;
}
const greeting = "hello";
module.exports = { clamp, greeting };
`

const jsTest = `'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { clamp } = require('./lib.js');
test('clamp', () => {
  assert.strictEqual(clamp(5, 0, 10), 5);
  assert.strictEqual(clamp(-1, 0, 10), 0);
  assert.strictEqual(clamp(11, 0, 10), 10);
});
`

// TestMutantsClassifyJavaScript: node's own test runner on a small
// module: the comparisons' mutants are killed, the untested string's
// survives, and the boundary mutants the tests cannot tell survive.
func TestMutantsClassifyJavaScript(t *testing.T) {
	testutil.Need(t, "node", "git")
	repo := repoOf(t, map[string]string{"lib.js": jsLib, "lib.test.js": jsTest})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := mutant.Run(ctx, mutant.Options{Store: newStore(t), Repo: repo, Test: "node --test lib.test.js", Forks: 2, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		line, orig, repl string
		status           mutant.Status
	}{
		{"x < lo", "<", ">=", mutant.Killed},
		{"x > hi", ">", "<=", mutant.Killed},
		{"x < lo", "<", "<=", mutant.Survived}, // equal at the boundary: untested
		{"greeting =", `"hello"`, `""`, mutant.Survived},
		{"return lo", "lo", "", ""}, // identifiers are not mutated
	}
	lines := strings.Split(jsLib, "\n")
	for _, r := range rep.Results {
		if r.File != "lib.js" {
			t.Errorf("mutated %s", r.File)
		}
	}
	for _, w := range want {
		var got mutant.Status
		for _, r := range rep.Results {
			if strings.Contains(lines[r.Line-1], w.line) && r.Original == w.orig && r.Replacement == w.repl {
				got = r.Status
			}
		}
		if got != w.status {
			t.Errorf("%q %s→%s: %q, want %q", w.line, w.orig, w.repl, got, w.status)
		}
	}
}
