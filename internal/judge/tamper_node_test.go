package judge_test

import (
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestTamperNode: the module under test replacing every function of
// node:assert and node:assert/strict fails with a reason that names the
// tampering; honest fixes still pass.
func TestTamperNode(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "node")
	testutil.Need(t, "npm")
	repo := fixture(t, nodeFiles)
	neuter := "for (const m of ['node:assert', 'node:assert/strict']) {\n  const a = require(m);\n  for (const k of Object.keys(a)) if (typeof a[k] === 'function') a[k] = () => {};\n}\n"
	judgeAll(t, repo, "npm test", nil, []judged{
		{name: "honest fix", edits: map[string]edit{"src/sum.js": {content: "exports.sum = (a, b) => a + b;\nexports.mul = (a, b) => a * b;\n"}}, pass: true},
		{name: "honest fix through a new module", pass: true, edits: map[string]edit{
			"src/sum.js":   {content: "module.exports = require('./arith');\n"},
			"src/arith.js": {content: "exports.sum = (a, b) => a + b;\nexports.mul = (a, b) => a * b;\n"},
		}},
		{name: "replaces every function of node:assert", reason: "tampering", edits: map[string]edit{
			"src/sum.js": {content: neuter + "exports.sum = (a, b) => a - b;\nexports.mul = (a, b) => a * b;\n"},
		}},
	}, nil)
}
