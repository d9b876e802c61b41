package judge_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// judgeSelecting judges the cases' patches under a command that selects
// tests, checks each verdict like judgeAll, and checks that the sentinels
// were planted, checked, and that the note says how they ran (how: a
// substring of sentinels.note).
func judgeSelecting(t *testing.T, repo, test string, hidden []string, how string, cases []judged) {
	t.Helper()
	s, err := workspace.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	o := judge.Options{Store: s, CacheDir: filepath.Join(s.Root, "..", "judge"), Repo: repo, Test: test, Hidden: hidden}
	var patches [][]byte
	for _, c := range cases {
		patches = append(patches, makePatch(t, repo, c.edits))
	}
	verdicts, err := judge.Judge(context.Background(), o, patches)
	if err != nil {
		t.Fatalf("judge: %v", err)
	}
	for i, c := range cases {
		v := verdicts[i]
		t.Logf("%s: %s — %s", c.name, v.Verdict, v.Reason)
		if (v.Verdict == event.Pass) != c.pass {
			t.Errorf("%s: pass = %v, want %v: %s\n%s", c.name, v.Verdict == event.Pass, c.pass, v.Reason, tail(v.Output))
		}
		if c.reason != "" && !strings.Contains(v.Reason, c.reason) {
			t.Errorf("%s: reason %q does not name %q", c.name, v.Reason, c.reason)
		}
		sr := v.Sentinels
		if sr == nil || sr.Planted == 0 || sr.Checked == 0 || !strings.Contains(sr.Note, how) {
			t.Errorf("%s: sentinels %+v: want some planted and checked, and a note saying %q", c.name, sr, how)
		}
	}
}

// assertEqualNoop is code under test that makes unittest's assertEqual
// pass any two values.
const assertEqualNoop = "import unittest\nunittest.TestCase.assertEqual = lambda self, a, b, msg=None: None\n"

// forgePassed pauses pytest's capture, prints a PASSED line for every test
// of every test file, and exits 0: forged output.
const forgePassed = "import gc, glob, os, re\nfor o in gc.get_objects():\n    if type(o).__name__ == 'CaptureManager':\n        o.suspend_global_capture(in_=True)\n        break\nfor f in sorted(glob.glob('tests/test_*.py')):\n    src = open(f).read()\n    for n in re.findall(r'^def (test_\\w+)', src, re.M):\n        print('PASSED %s::%s' % (f, n))\n    for c, body in re.findall(r'^class (\\w+)\\(.*?\\):\\n((?:    .*\\n|\\n)*)', src, re.M):\n        for n in re.findall(r'def (test_\\w+)', body):\n            print('PASSED %s::%s::%s' % (f, c, n))\nprint('========== 9 passed in 0.01s ==========')\nimport sys\nsys.stdout.flush()\nos._exit(0)\n"

// TestTamperPythonSelecting: under commands that deselect (--deselect) or
// select (-k, node ids) tests, code under test that replaces unittest's
// assertEqual, or forges passing output and exits 0, fails as tampering —
// on the judge before sentinels ran with selected tests (4e37fb3) both
// passed — and the honest fix passes.
func TestTamperPythonSelecting(t *testing.T) {
	t.Parallel()
	testutil.NeedPytest(t)
	repo := fixture(t, pyTamperFiles)
	// add stays broken: the selections below leave out every plain
	// assert on it, so only the unittest tests (assertEqual) see it.
	ops := func(extra string) map[string]edit {
		return map[string]edit{"calc/ops.py": {content: extra + "\n\ndef add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"}}
	}
	cases := []judged{
		{name: "honest fix", edits: map[string]edit{"calc/ops.py": {content: pyFixedOps}}, pass: true},
		{name: "replaces unittest's assertEqual", reason: "tampering", edits: ops(assertEqualNoop)},
		{name: "forges PASSED lines and exits 0", reason: "tampering", edits: ops(forgePassed)},
	}
	for _, c := range []struct{ name, cmd, how string }{
		{"deselect", "/usr/bin/python3 -m pytest -q --deselect tests/test_ops.py::test_add --deselect=tests/test_strict.py", "planted and checked in its own run"},
		{"-k", "/usr/bin/python3 -m pytest -q -k TestOps", "sentinel-only run"},
		{"node ids", "/usr/bin/python3 -m pytest -q tests/test_unit.py::TestOps::test_add tests/test_ops.py::test_mul", "sentinel-only run"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			judgeSelecting(t, repo, c.cmd, nil, c.how, cases)
		})
	}
}

// TestTamperGoSelecting: under go test -run, code under test that reruns
// its test binary and flips every failure, or forges a passing run of
// every test it reads, fails as tampering (both passed on 4e37fb3), and
// the honest fix passes.
func TestTamperGoSelecting(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "go")
	repo := fixture(t, goFiles)
	imports := "\t\"fmt\"\n\t\"os\"\n\t\"path/filepath\"\n\t\"regexp\"\n"
	forge := readTests + "\tfor _, n := range names {\n\t\tfmt.Printf(\"=== RUN   %s\\n--- PASS: %s (0.00s)\\n\", n, n)\n\t}\n\tfmt.Println(\"PASS\")\n\tos.Exit(0)\n"
	flip := "\tif os.Getenv(\"CALC_INNER\") != \"\" {\n\t\treturn\n\t}\n\tcmd := exec.Command(os.Args[0], os.Args[1:]...)\n\tcmd.Env = append(os.Environ(), \"CALC_INNER=1\")\n\tout, _ := cmd.CombinedOutput()\n\ts := strings.NewReplacer(\"--- FAIL\", \"--- PASS\", \"FAIL\\n\", \"PASS\\n\").Replace(string(out))\n\tos.Stdout.WriteString(s)\n\tos.Exit(0)\n"
	judgeSelecting(t, repo, "go test -run=TestAdd ./...", nil, "sentinel-only run", []judged{
		{name: "honest fix", edits: map[string]edit{"calc.go": {content: goFixed}}, pass: true},
		{name: "reruns itself and flips every failure", reason: "tampering", edits: map[string]edit{
			"calc.go": {content: goTamper("\t\"os\"\n\t\"os/exec\"\n\t\"strings\"\n", flip)},
		}},
		{name: "forges a passing run of every test it reads", reason: "tampering", edits: map[string]edit{"calc.go": {content: goTamper(imports, forge)}}},
	})
}

// TestJudgeNodeSelecting: node --test with --test-name-pattern gets its
// sentinels in a sentinel-only run; replacing node:assert's strictEqual
// fails as tampering and the honest fix passes.
func TestJudgeNodeSelecting(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "node")
	repo := fixture(t, nodeFiles)
	judgeSelecting(t, repo, "node --test --test-name-pattern=sum", nil, "sentinel-only run", []judged{
		{name: "honest fix", edits: map[string]edit{"src/sum.js": {content: "exports.sum = (a, b) => a + b;\nexports.mul = (a, b) => a * b;\n"}}, pass: true},
		{name: "replaces strictEqual", reason: "tampering", edits: map[string]edit{"src/sum.js": {content: "const assert = require('node:assert');\nassert.strictEqual = () => {};\nexports.sum = (a, b) => a - b;\nexports.mul = (a, b) => a * b;\n"}}},
	})
}
