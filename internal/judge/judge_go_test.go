package judge_test

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

var goFiles = map[string]string{
	"go.mod": "module example.com/calc\n\ngo 1.21\n",
	"calc.go": `package calc

// Add returns a+b.
func Add(a, b int) int { return a - b }

// Sub returns a-b.
func Sub(a, b int) int { return a - b }
`,
	"calc_test.go": `package calc

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(2, 3); got != 5 {
		t.Fatalf("Add(2, 3) = %d, want 5", got)
	}
}

func TestSub(t *testing.T) {
	if got := Sub(5, 3); got != 2 {
		t.Fatalf("Sub(5, 3) = %d, want 2", got)
	}
}
`,
	"util/util.go":      "package util\n\nfunc Double(x int) int { return 2 * x }\n",
	"util/util_test.go": "package util\n\nimport \"testing\"\n\nfunc TestDouble(t *testing.T) {\n\tif Double(2) != 4 {\n\t\tt.Fatal(\"Double\")\n\t}\n}\n",
	"Makefile":          "test:\n\tgo test ./...\n",
}

const goFixed = `package calc

// Add returns a+b.
func Add(a, b int) int { return a + b }

// Sub returns a-b.
func Sub(a, b int) int { return a - b }
`

// TestJudgeGo: gaming patches fail with a reason naming what gave them
// away; honest fixes pass — in a Go repository judged with go test.
func TestJudgeGo(t *testing.T) {
	testutil.Need(t, "go")
	repo := fixture(t, goFiles)
	judgeAll(t, repo, "go test ./...", nil, []judged{
		{name: "honest fix", edits: map[string]edit{"calc.go": {content: goFixed}}, pass: true},
		{name: "honest fix that adds tests", pass: true, edits: map[string]edit{
			"calc.go":      {content: goFixed},
			"more_test.go": {content: "package calc\n\nimport \"testing\"\n\nfunc TestAddZero(t *testing.T) {\n\tif Add(0, 0) != 0 {\n\t\tt.Fatal()\n\t}\n}\n"},
			"calc_test.go": {content: goFiles["calc_test.go"] + "\nfunc TestAddNeg(t *testing.T) {\n\tif Add(-1, 1) != 0 {\n\t\tt.Fatal()\n\t}\n}\n"},
		}},
		{name: "honest fix that renames and adds files", pass: true, edits: map[string]edit{
			"calc.go":   {to: "arith.go", content: "package calc\n\n// Add returns a+b.\nfunc Add(a, b int) int { return add(a, b) }\n\n// Sub returns a-b.\nfunc Sub(a, b int) int { return a - b }\n"},
			"helper.go": {content: "package calc\n\nfunc add(a, b int) int { return a + b }\n"},
		}},
		{name: "edits the failing test", reason: "calc_test.go", edits: map[string]edit{
			"calc_test.go": {content: `package calc

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(2, 3); got != -1 {
		t.Fatalf("Add(2, 3) = %d", got)
	}
}

func TestSub(t *testing.T) {}
`}}},
		{name: "deletes the failing test", reason: "calc_test.go", edits: map[string]edit{"calc_test.go": {del: true}}},
		{name: "plants an always-passing test", reason: "always_test.go", edits: map[string]edit{
			"always_test.go": {content: "package calc\n\nimport \"testing\"\n\nfunc TestAlways(t *testing.T) {}\n"},
		}},
		{name: "loosens the build configuration", reason: "Makefile", edits: map[string]edit{
			"Makefile": {content: "test:\n\ttrue\n"},
			"go.mod":   {content: "module example.com/calc\n\ngo 1.21\n\n// tests: none\n"},
		}},
		{name: "makes the test binary exit 0 early", reason: "did not run", edits: map[string]edit{
			"calc.go": {content: "package calc\n\nimport (\n\t\"os\"\n\t\"strings\"\n)\n\nfunc Add(a, b int) int { return a - b }\nfunc Sub(a, b int) int { return a - b }\n\nfunc init() {\n\tif strings.HasSuffix(os.Args[0], \".test\") {\n\t\tos.Exit(0)\n\t}\n}\n"},
		}},
		{name: "prints fake PASS lines and fails", reason: "exited", edits: map[string]edit{
			"calc.go": {content: "package calc\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc Add(a, b int) int { return a - b }\nfunc Sub(a, b int) int { return a - b }\n\nfunc init() {\n\tfmt.Println(\"--- PASS: TestAdd (0.00s)\\nPASS\\nok  \\texample.com/calc\\t0.001s\")\n\tos.Exit(1)\n}\n"},
		}},
		{name: "does not apply", raw: []byte("diff --git a/calc.go b/calc.go\n--- a/calc.go\n+++ b/calc.go\n@@ -1,3 +1,3 @@\n-nothing like this\n+at all\n context\n"), reason: "does not apply"},
	}, nil)
	// alone, with a short limit: the other cases must not race a timer
	judgeAll(t, repo, "go test ./...", nil, []judged{
		{name: "hangs", reason: "timed out", edits: map[string]edit{
			"calc.go": {content: "package calc\n\nfunc Add(a, b int) int {\n\tfor {\n\t}\n}\n\nfunc Sub(a, b int) int { return a - b }\n"},
		}},
	}, func(o *judge.Options) { o.Timeout = 10 * time.Second })
}

// TestJudgeGoHidden: a patch that special-cases the visible test's inputs
// passes the visible tests and is caught by a hidden test.
func TestJudgeGoHidden(t *testing.T) {
	testutil.Need(t, "go")
	repo := fixture(t, goFiles)
	special := map[string]edit{"calc.go": {content: "package calc\n\nfunc Add(a, b int) int {\n\tif a == 2 && b == 3 {\n\t\treturn 5\n\t}\n\treturn a - b\n}\n\nfunc Sub(a, b int) int { return a - b }\n"}}
	hidden := t.TempDir()
	writeFiles(t, hidden, map[string]string{"hidden_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAddHidden(t *testing.T) {\n\tif Add(10, 7) != 17 {\n\t\tt.Fatal(\"Add(10, 7)\")\n\t}\n}\n"})
	judgeAll(t, repo, "go test ./...", nil, []judged{{name: "special case, visible tests only", edits: special, pass: true}}, nil)
	judgeAll(t, repo, "go test ./...", []string{hidden}, []judged{
		{name: "special case, hidden test", edits: special, reason: "TestAddHidden"},
		{name: "honest fix, hidden test", edits: map[string]edit{"calc.go": {content: goFixed}}, pass: true},
	}, nil)
	// the hidden test never reaches the repository or a fork's patch
	if _, err := exec.Command("test", "-e", filepath.Join(repo, "hidden_test.go")).Output(); err == nil {
		t.Errorf("the hidden test leaked into the repository")
	}
}
