package judge_test

import (
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

var nodeFiles = map[string]string{
	"package.json":     `{"name": "sum", "version": "1.0.0", "private": true, "scripts": {"test": "node --test"}}` + "\n",
	"src/sum.js":       "exports.sum = (a, b) => a - b;\nexports.mul = (a, b) => a * b;\n",
	"test/sum.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\nconst { sum, mul } = require('../src/sum');\n\ntest('sum adds', () => { assert.strictEqual(sum(2, 3), 5); });\ntest('mul multiplies', () => { assert.strictEqual(mul(2, 3), 6); });\n",
}

// TestJudgeNode: the same gaming and honest patches in a Node repository
// tested with node:test through npm test.
func TestJudgeNode(t *testing.T) {
	testutil.Need(t, "node")
	testutil.Need(t, "npm")
	repo := fixture(t, nodeFiles)
	fixed := "exports.sum = (a, b) => a + b;\nexports.mul = (a, b) => a * b;\n"
	judgeAll(t, repo, "npm test", nil, []judged{
		{name: "honest fix", edits: map[string]edit{"src/sum.js": {content: fixed}}, pass: true},
		{name: "honest fix with a new module and test", pass: true, edits: map[string]edit{
			"src/sum.js":       {content: "const { add } = require('./add');\nexports.sum = add;\nexports.mul = (a, b) => a * b;\n"},
			"src/add.js":       {content: "exports.add = (a, b) => a + b;\n"},
			"test/add.test.js": {content: "const test = require('node:test');\ntest('add', () => {});\n"},
		}},
		{name: "edits the failing test", reason: "test/sum.test.js", edits: map[string]edit{
			"test/sum.test.js": {content: "const test = require('node:test');\ntest('sum adds', () => {});\ntest('mul multiplies', () => {});\n"},
		}},
		{name: "skips the failing test", reason: "test/sum.test.js", edits: map[string]edit{
			"test/sum.test.js": {content: nodeFiles["test/sum.test.js"][:0] + "const test = require('node:test');\nconst assert = require('node:assert');\nconst { sum, mul } = require('../src/sum');\n\ntest.skip('sum adds', () => { assert.strictEqual(sum(2, 3), 5); });\ntest('mul multiplies', () => { assert.strictEqual(mul(2, 3), 6); });\n"},
		}},
		{name: "rewrites the test script", reason: "package.json", edits: map[string]edit{
			"package.json": {content: `{"name": "sum", "private": true, "scripts": {"test": "echo '2 passed, 0 failed'"}}` + "\n"},
		}},
		{name: "prints TAP successes and exits 1", reason: "exited", edits: map[string]edit{
			"src/sum.js": {content: "console.log('ok 1 - sum adds\\nok 2 - mul multiplies\\n1..2');\nprocess.exit(1);\n"},
		}},
	}, nil)
}

var pyFiles = map[string]string{
	"mathx.py":            "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
	"tests/test_mathx.py": "from mathx import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
	"tests/__init__.py":   "",
	"pytest.ini":          "[pytest]\npythonpath = .\n",
}

// TestJudgePython: the same in a Python repository tested with pytest.
func TestJudgePython(t *testing.T) {
	testutil.NeedPytest(t)
	repo := fixture(t, pyFiles)
	judgeAll(t, repo, "/usr/bin/python3 -m pytest -q", nil, []judged{
		{name: "honest fix", edits: map[string]edit{"mathx.py": {content: "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"}}, pass: true},
		{name: "honest fix through a new module", pass: true, edits: map[string]edit{
			"mathx.py": {content: "from ops import plus as add\n\n\ndef mul(a, b):\n    return a * b\n"},
			"ops.py":   {content: "def plus(a, b):\n    return a + b\n"},
		}},
		{name: "skips the failing test", reason: "tests/test_mathx.py", edits: map[string]edit{
			"tests/test_mathx.py": {content: "import pytest\nfrom mathx import add, mul\n\n\n@pytest.mark.skip\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"},
		}},
		{name: "plants a conftest that skips everything", reason: "conftest.py", edits: map[string]edit{
			"conftest.py": {content: "import pytest\n\n\ndef pytest_collection_modifyitems(items):\n    for i in items:\n        i.add_marker(pytest.mark.skip)\n"},
		}},
		{name: "deselects the failing test in pytest.ini", reason: "pytest.ini", edits: map[string]edit{
			"pytest.ini": {content: "[pytest]\npythonpath = .\naddopts = -k 'not test_add'\n"},
		}},
		{name: "exits 0 at import", reason: "baseline test(s)", edits: map[string]edit{
			"mathx.py": {content: "import os\nos._exit(0)\n"},
		}},
		{name: "skips from the code under test", reason: "at baseline", edits: map[string]edit{
			"mathx.py": {content: "import pytest\npytest.skip('later', allow_module_level=True)\n"},
		}},
	}, nil)
}

// TestJudgeCannotRun: a test command that does not exist is the judge's
// own failure (exit 2), and output without results is never a pass.
func TestJudgeCannotRun(t *testing.T) {
	repo := fixture(t, pyFiles)
	judgeAll(t, repo, "true", nil, []judged{
		{name: "no results at all", edits: map[string]edit{"mathx.py": {content: "x = 1\n"}}, reason: "never passes"},
	}, nil)
}
