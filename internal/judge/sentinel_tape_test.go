package judge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlanTape: which files of a tape suite get sentinels, through what
// binding, and when they are checked. A file the command cannot run, or
// whose baseline tests it shares by name with another file, gets none;
// a file only some runs reach is checked only in those.
func TestPlanTape(t *testing.T) {
	t.Parallel()
	tree := t.TempDir()
	files := map[string]string{
		"package.json":        `{"scripts": {"test": "npm run unit --silent", "unit": "nyc tape 'test/unit/**/*.js' test/extra.mjs"}}`,
		"test/unit/a.js":      "'use strict';\nvar tape = require('tape');\ntape('alpha works', function (t) { t.deepEqual(1, 1); t.end(); });\ntape('shared', function (t) { t.ok(1); t.end(); });\n",
		"test/unit/b.js":      "const test = require('tape');\ntest('shared', (t) => { t.ok(1); t.end(); });\n",
		"test/unit/deep/c.js": "require('tape')('gamma works', function (q) { q.test('nested', function (s) { s.notEqual(1, 2); s.match('a', /a/); s.end(); }); q.end(); });\n",
		"test/extra.mjs":      "import test from 'tape';\ntest(`delta works`, (t) => { t.equal(1, 1); t.end(); });\n",
		"test/other/d.js":     "var test = require('tape');\ntest('epsilon works', function (t) { t.ok(1); t.end(); });\n",
		"test/unit/e.js":      "var test = require('tape');\nif (!global.Symbol) return;\ntest('zeta works', function (t) { t.ok(1); t.end(); });\n",
	}
	for p, c := range files {
		os.MkdirAll(filepath.Join(tree, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(tree, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base := &Results{Format: "tape", Named: true}
	for _, n := range []string{"alpha works", "shared", "gamma works", "nested", "delta works", "epsilon works", "zeta works"} {
		base.add(n, Passed)
	}
	p := planSentinels(tree, nil, "npm test", &Baseline{Results: base})
	if p.runner != "tape" || p.note != "" {
		t.Fatalf("runner %q, note %q", p.runner, p.note)
	}
	for _, tc := range []struct {
		file string
		want []string // in the appended code; nil: nothing appended
	}{
		{"test/unit/a.js", []string{"= tape;", ".deepEqual([", ".equal(", ".ok(", "var self = __filename,", ".emit(kind, payload)", "'result'"}},
		{"test/unit/b.js", nil}, // its only test's name is a.js's too
		{"test/unit/deep/c.js", []string{"= require('tape');", ".test(", ".notEqual(", ".match("}},
		{"test/extra.mjs", []string{"= test;", "var self = import.meta.url,"}},
		{"test/other/d.js", nil}, // the command does not name it
		{"test/unit/e.js", nil},  // code after its top-level return would not run
	} {
		t.Run(tc.file, func(t *testing.T) {
			src, ok := p.appends[tc.file]
			if tc.want == nil {
				if ok {
					t.Fatalf("sentinels planted:\n%s", src)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(src, w) {
					t.Errorf("no %q in\n%s", w, src)
				}
			}
		})
	}
	// a run where only a.js's tests ran checks a.js's sentinels only
	cur := &Results{Format: "tape", Named: true}
	cur.add("alpha works", Passed)
	for _, s := range p.list {
		if strings.Contains(p.appends["test/unit/a.js"], "("+quoteJS(s.name)+",") {
			o := Passed
			if s.mustFail {
				o = Failed
			}
			cur.add(s.name, o)
		}
	}
	c := checkSentinels(p, cur, 1)
	if c.tamper != "" || c.report.Checked == 0 || c.report.Checked == len(p.list) {
		t.Errorf("checked %d of %d, tamper %q", c.report.Checked, len(p.list), c.tamper)
	}
	c = checkSentinels(p, cur, 0)
	if !strings.Contains(c.tamper, "exited 0") {
		t.Errorf("exit 0 with a must-fail sentinel: tamper %q", c.tamper)
	}
	// a base whose own code wraps emit gets no check of the events' path
	// (it would fail every patch), and the note says so
	os.MkdirAll(filepath.Join(tree, "src"), 0o755)
	if err := os.WriteFile(filepath.Join(tree, "src", "metrics.js"), []byte("shimmer.wrap(EventEmitter.prototype, 'emit', count);\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p = planSentinels(tree, nil, "npm test", &Baseline{Results: base})
	if src := p.appends["test/unit/a.js"]; src == "" || strings.Contains(src, ".emit(kind") || !strings.Contains(p.note, "src/metrics.js wraps an emitter's emit") {
		t.Errorf("a base that wraps emit: note %q, a.js's sentinels:\n%s", p.note, src)
	}
}

func quoteJS(s string) string { return `"` + s + `"` }

// TestTapeGlobs: the files a tape command names.
func TestTapeGlobs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cmd       string
		named     bool
		match, no []string
	}{
		{"tape 'test/**/*.js'", true, []string{"test/a.js", "test/x/y/b.js"}, []string{"lib/a.js", "test/a.mjs"}},
		{"node node_modules/tape/bin/tape test/*.{js,mjs} -r ./setup.js", true, []string{"test/a.js", "test/a.mjs"}, []string{"setup.js", "test/x/a.js"}},
		{"npx tape --ignore .gitignore test/one.js && eslint .", true, []string{"test/one.js"}, []string{".gitignore", "test/two.js"}},
		{"node test/index.js", false, nil, nil},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			globs, named := tapeGlobs(tc.cmd)
			if named != tc.named {
				t.Fatalf("named = %v", named)
			}
			any := func(f string) bool {
				for _, g := range globs {
					if g.MatchString(f) {
						return true
					}
				}
				return false
			}
			for _, f := range tc.match {
				if !any(f) {
					t.Errorf("%s not matched by %v", f, globs)
				}
			}
			for _, f := range tc.no {
				if any(f) {
					t.Errorf("%s matched by %v", f, globs)
				}
			}
		})
	}
}
