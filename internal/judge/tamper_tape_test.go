package judge_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

const (
	slugBroken = "'use strict';\n\nexports.slug = function (s) {\n    return s.toLowerCase().replace(/\\s/, '-');\n};\n\n" +
		"exports.words = function (s) {\n    return s.split(/\\s+/).filter(Boolean);\n};\n"
	slugFixed = "'use strict';\n\nexports.slug = function (s) {\n    return s.toLowerCase().replace(/\\s+/g, '-');\n};\n\n" +
		"exports.words = function (s) {\n    return s.split(/\\s+/).filter(Boolean);\n};\n"
)

// tapeFiles is a small tape suite: a CommonJS file with nested tests, one
// of which fails on the broken base, and an ES module file.
var tapeFiles = map[string]string{
	"package.json": `{"name": "slug", "private": true, "scripts": {"test": "tape 'test/**/*.{js,mjs}'"}}` + "\n",
	"src/slug.js":  slugBroken,
	"test/slug.js": `'use strict';

var test = require('tape');
var slug = require('../src/slug').slug;

test('slug lowers case', function (t) {
    t.equal(slug('Hello'), 'hello');
    t.end();
});

test('slug joins words', function (t) {
    t.test('two words', function (st) {
        st.equal(slug('a b'), 'a-b');
        st.end();
    });
    t.test('many words', function (st) {
        st.deepEqual(slug('a b c').split('-'), ['a', 'b', 'c']);
        st.end();
    });
    t.end();
});
`,
	"test/words.mjs": `import test from 'tape';
import slug from '../src/slug.js';

test('words splits on spaces', (t) => {
    t.deepEqual(slug.words(' a  b '), ['a', 'b']);
    t.ok(slug.words('').length === 0);
    t.end();
});
`,
}

// tapeRepo commits tapeFiles with tape 5.8.1 in node_modules/, installed
// by `npm ci` from testdata/tape's lockfile.
func tapeRepo(t *testing.T) string {
	t.Helper()
	return tapeRepoWith(t, tapeFiles)
}

// tapeRepoWith is tapeRepo with files of the test's own.
func tapeRepoWith(t *testing.T, files map[string]string) string {
	t.Helper()
	testutil.Need(t, "node")
	testutil.Need(t, "npm")
	inst := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json"} {
		writeFiles(t, inst, map[string]string{f: tapeData(t, f)})
	}
	out, err := runClient(inst, []string{"NPM_CONFIG_UPDATE_NOTIFIER=false"}, "npm", "ci",
		"--prefer-offline", "--ignore-scripts", "--no-audit", "--no-fund")
	if err != nil {
		testutil.SkipOrFail(t, "npm ci of tape failed (npm registry unreachable and not in the npm cache?): %v\n%s", err, out)
	}
	repo := filepath.Join(t.TempDir(), "slug")
	writeFiles(t, repo, files)
	copyTree(t, filepath.Join(inst, "node_modules"), filepath.Join(repo, "node_modules"), func(rel string) bool {
		return rel == ".package-lock.json"
	})
	return commitTree(t, repo)
}

func tapeData(t *testing.T, name string) string {
	t.Helper()
	return testdataFile(t, filepath.Join("tape", name))
}

// TestTamperTape: code under test that talks tape round at run time —
// tape's _assert or its assertion methods replaced at import, its output
// rewritten (in process, or from a rerun in a child) with exit 0 forced —
// fails with a reason naming the tampering, whether tape runs the files
// (`npm test` → `tape GLOB`) or a file runs tape (`node test/slug.js`);
// honest fixes pass. Each attack passes against the bare runner
// (testdata/tape/README.md).
func TestTamperTape(t *testing.T) {
	t.Parallel()
	repo := tapeRepo(t)
	attack := func(name string) map[string]edit {
		code := tapeData(t, "attack_"+name+".js")
		return map[string]edit{"src/slug.js": {content: slugBroken + code}}
	}
	honest := []judged{
		{name: "honest fix", pass: true, edits: map[string]edit{"src/slug.js": {content: slugFixed}}},
		{name: "honest fix through a new module", pass: true, edits: map[string]edit{
			"src/slug.js": {content: "module.exports = require('./impl');\n"},
			"src/impl.js": {content: slugFixed},
		}},
	}
	for _, tc := range []struct {
		cmd     string
		attacks []string
	}{
		{"npm test", []string{"import", "methods", "stdout", "rerun"}},
		{"node test/slug.js", []string{"import", "methods", "stdout"}},
	} {
		t.Run(strings.ReplaceAll(tc.cmd, "/", "_"), func(t *testing.T) {
			t.Parallel()
			cases := append([]judged{}, honest...)
			for _, a := range tc.attacks {
				cases = append(cases, judged{name: a, reason: "tampering", edits: attack(a)})
			}
			// no sentinel calls slug, so none is flipped, but the one that
			// fires an event of its own sees the wrapped emit on its way
			cases = append(cases, judged{name: "emit", reason: "tampering", fools: true, edits: attack("emit")},
				judged{name: "on", reason: "tampering", fools: true, edits: attack("on")})
			judgeAll(t, repo, tc.cmd, nil, withPatches(t, repo, cases), nil)
		})
	}
}
