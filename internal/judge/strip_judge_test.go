package judge_test

import (
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestJudgeStripBypass attacks the strip from inside the patch, in a real
// judge run: a harmless edit as a git section with a plain unified diff of
// the failing test appended. git apply reads both; before the fix the
// judge split sections only at "diff --git", applied the test edit as
// part of the first section and passed the non-fix with "stripped: []".
// The positive controls: the honest fix passes, and the same test edit as
// a section of its own is stripped by path and the real test still fails.
func TestJudgeStripBypass(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "go")
	repo := fixture(t, goFiles)
	harmless := "diff --git a/calc.go b/calc.go\n--- a/calc.go\n+++ b/calc.go\n@@ -1,4 +1,4 @@\n package calc\n \n-// Add returns a+b.\n+// Add returns a plus b.\n func Add(a, b int) int { return a - b }\n"
	testEdit := "--- a/calc_test.go\n+++ b/calc_test.go\n@@ -6 +6 @@\n-\tif got := Add(2, 3); got != 5 {\n+\tif got := Add(2, 3); got != -1 {\n"
	judgeAll(t, repo, "go test ./...", nil, []judged{
		{name: "honest fix", edits: map[string]edit{"calc.go": {content: goFixed}}, pass: true},
		{name: "the test edit in a section of its own", raw: []byte(harmless + "diff --git a/calc_test.go b/calc_test.go\n" + testEdit), reason: "calc_test.go"},
		{name: "the test edit as a plain diff after a section", raw: []byte(harmless + testEdit), reason: "could not attribute"},
		{name: "the test edit in a commit message", raw: []byte("Subject: fix\n\n" + testEdit + "\n" + harmless), reason: "could not attribute"},
		{name: "the test edit behind a --- line that names another file", raw: []byte("diff --git a/calc.go b/calc.go\n" + testEdit), reason: "could not attribute"},
	}, nil)
}
