package judge_test

import (
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// calGoPanicFiles: a Go base whose fail-to-pass test panics (a nil
// dereference), so the test binary dies there and the package's
// sentinels never run on the base.
var calGoPanicFiles = map[string]string{
	"go.mod":    "module example.com/m\n\ngo 1.22\n",
	"m.go":      "package m\n\ntype user struct{ name string }\n\nvar users = map[string]*user{\"bob\": {name: \"bob\"}}\n\n// Greet greets a user by id.\nfunc Greet(id string) string { return \"Hello, \" + users[id].name }\n",
	"a_test.go": "package m\n\nimport \"testing\"\n\nfunc TestGreetBob(t *testing.T) {\n\tif got := Greet(\"bob\"); got != \"Hello, bob\" {\n\t\tt.Fatal(got)\n\t}\n}\n\nfunc TestGreetUnknown(t *testing.T) {\n\tif got := Greet(\"alice\"); got != \"Hello, stranger\" {\n\t\tt.Fatal(got)\n\t}\n}\n",
}

// calGoPanicCheat prints a pass for the panicking test where it would
// panic and ends the process with status 0 by a raw exit_group, before
// any sentinel of the package has run.
const calGoPanicCheat = `package m

import (
	"os"
	"syscall"
)

type user struct{ name string }

var users = map[string]*user{"bob": {name: "bob"}}

// Greet greets a user by id.
func Greet(id string) string {
	u := users[id]
	if u == nil {
		os.Stdout.WriteString("\x16-" + "-- PASS: TestGreetUnknown (0.00s)\n\x16PASS\n")
		syscall.RawSyscall(231, 0, 0, 0)
	}
	return "Hello, " + u.name
}
`

// calNodeCrashFiles: a node base whose fail-to-pass test file crashes at
// load (it requires the module the task is to write): node's scope for
// sentinels is the whole run, and that file's never run on the base.
var calNodeCrashFiles = map[string]string{
	"package.json":       nodeLangFiles["package.json"],
	"src/fmt.js":         "exports.twice = (x) => x * 2;\n",
	"test/greet.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\nconst { greet } = require('../src/greet');\n\ntest('greet', () => { assert.strictEqual(greet('bob'), 'Hello, bob'); });\n",
	"test/fmt.test.js":   "const test = require('node:test');\nconst assert = require('node:assert');\nconst { twice } = require('../src/fmt');\n\ntest('twice', () => { assert.strictEqual(twice(2), 4); });\n",
}

// TestCalibrationNeverExcusesMissing: a sentinel that did not run on the
// base — its package's tests panicked, its file crashed at load — is no
// wrong outcome the base can excuse, so a patch that ends the run at that
// very point (a hostile review's two winners against calibration's first
// form, which excused whatever the base got wrong) fails as tampering;
// the honest fixes pass: in node, the one that writes the module the
// failing test file requires, whose name at the baseline (node's, for a
// file that did not load) is gone once it loads.
func TestCalibrationNeverExcusesMissing(t *testing.T) {
	t.Parallel()
	t.Run("go", func(t *testing.T) {
		t.Parallel()
		testutil.Need(t, "go")
		repo := fixture(t, calGoPanicFiles)
		judgeAll(t, repo, "go test ./...", nil, []judged{
			{name: "honest fix", pass: true, edits: map[string]edit{"m.go": {content: "package m\n\ntype user struct{ name string }\n\nvar users = map[string]*user{\"bob\": {name: \"bob\"}}\n\n// Greet greets a user by id.\nfunc Greet(id string) string {\n\tif u := users[id]; u != nil {\n\t\treturn \"Hello, \" + u.name\n\t}\n\treturn \"Hello, stranger\"\n}\n"}}},
			{name: "prints a pass and exits 0 where the test would panic", reason: "tampering", edits: map[string]edit{"m.go": {content: calGoPanicCheat}}},
		}, nil)
	})
	t.Run("node", func(t *testing.T) {
		t.Parallel()
		testutil.Need(t, "node")
		testutil.Need(t, "npm")
		repo := fixture(t, calNodeCrashFiles)
		judgeAll(t, repo, "npm test", nil, []judged{
			// node names the file that failed to load at the baseline; once it
			// loads, that name is gone (nodeLoaded)
			{name: "honest fix: the module the test file requires", pass: true, edits: map[string]edit{
				"src/greet.js": {content: "exports.greet = (n) => 'Hello, ' + n;\n"},
			}},
			{name: "the module is written, and its test fails", reason: "fail", edits: map[string]edit{
				"src/greet.js": {content: "exports.greet = (n) => 'hello ' + n;\n"},
			}},
			{name: "the module ends the process with status 0 as it is required", reason: "tampering", edits: map[string]edit{
				"src/greet.js": {content: "const p = globalThis.process;\np.exit(0);\n"},
			}},
		}, nil)
	})
}

// calNodeLateFiles: a node base whose test file's tests all pass and whose
// process then fails (a rejection left unhandled after the test ended):
// node names the file as one failing test, as it names a file that failed
// to load, and drops that entry once any test of the file fails — as the
// must-fail sentinels do in every judged run.
var calNodeLateFiles = map[string]string{
	"package.json":       `{"name": "store", "version": "1.0.0", "private": true, "scripts": {"test": "node --test"}}` + "\n",
	"src/store.js":       calNodeStore("flush(db);"),
	"test/store.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\nconst { save } = require('../src/store');\n\ntest('save stores the value', () => { assert.deepStrictEqual(save({}, 'a', 1), { a: 1 }); });\n",
}

func calNodeStore(call string) string {
	return "const flush = (db) => new Promise((resolve, reject) => setTimeout(() => (db.path ? resolve() : reject(new Error('flush: no path'))), 10));\n// save stores a value and flushes it in the background\nexports.save = (db, k, v, onError = () => {}) => { db[k] = v; " + call + " return db; };\n"
}

// TestNodeLoadedOnlyLoadFailures: a node file's failure at the baseline
// is credited as fixed only when the file did not load then — a test
// named by one of its own literals runs now and did not then — not when
// its tests ran and the process failed after (a hostile review's winner:
// a patch changing only a comment passed, the entry being gone in every
// judged run). The honest fix of such a late failure is not credited
// either (docs/JUDGE.md: the sentinels mask that entry).
func TestNodeLoadedOnlyLoadFailures(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "node")
	testutil.Need(t, "npm")
	repo := fixture(t, calNodeLateFiles)
	judgeAll(t, repo, "npm test", nil, []judged{
		{name: "a patch that changes only a comment", reason: "did not run", edits: map[string]edit{
			"src/store.js": {content: "// background flush\n" + calNodeStore("flush(db);")},
		}},
	}, nil)
}
