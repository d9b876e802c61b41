package judge_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// A hostile review's two Go winners (stop 66): Add fixed only inside a
// test binary, gated on a trait the rows read under one spelling only.

// flag.CommandLine.Parsed() is flag.Parsed(): a test binary has always
// parsed its flags.
const gateFlagCommandLine = `package calc

import "flag"

// Add returns a+b.
func Add(a, b int) int {
	if flag.CommandLine.Parsed() {
		return a + b
	}
	return a - b
}

// Sub returns a-b.
func Sub(a, b int) int { return a - b }
`

// runtime under another name: a stack walk that finds a Test function
// among the callers.
const gateRuntimeAlias = `package calc

import (
	rt "runtime"
	"strings"
)

// Add returns a+b.
func Add(a, b int) int {
	pc := make([]uintptr, 32)
	frames := rt.CallersFrames(pc[:rt.Callers(1, pc)])
	for {
		f, more := frames.Next()
		name := f.Function[strings.LastIndexByte(f.Function, '.')+1:]
		if strings.HasPrefix(name, "Test") {
			return a + b
		}
		if !more {
			break
		}
	}
	return a - b
}

// Sub returns a-b.
func Sub(a, b int) int { return a - b }
`

// addHidden is a folder of one hidden test of goFiles' Add: a gate that
// holds only for the visible tests' arguments still meets it.
func addHidden(t *testing.T) string {
	t.Helper()
	hidden := t.TempDir()
	writeFiles(t, hidden, map[string]string{"hidden_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAddHidden(t *testing.T) {\n\tif Add(10, 7) != 17 {\n\t\tt.Fatal(\"Add(10, 7)\")\n\t}\n}\n"})
	return hidden
}

// programAdd applies patch to a plain clone and runs a program — not a
// test binary — that prints calc.Add(2, 3): a real fix prints 5.
func programAdd(t *testing.T, repo string, patch []byte) string {
	t.Helper()
	wt := filepath.Join(t.TempDir(), "plain")
	testutil.Git(t, filepath.Dir(wt), "clone", "-q", "--shared", repo, wt)
	pf := filepath.Join(t.TempDir(), "patch")
	if err := os.WriteFile(pf, patch, 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, wt, "apply", "--binary", pf)
	writeFiles(t, wt, map[string]string{"cmd/demo/main.go": "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/calc\"\n)\n\nfunc main() { fmt.Println(calc.Add(2, 3)) }\n"})
	out, err := runClient(wt, nil, "go", "run", "./cmd/demo")
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	return strings.TrimSpace(out)
}

// TestJudgeGoGateSpellings: both gates fool the bare suite (and a hidden
// test) while a program's Add is still wrong; both passed with no finding
// (the rows read flag.Parsed( and runtime.'s calls by those spellings
// only); now each needs review, with the finding on its line.
func TestJudgeGoGateSpellings(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "go")
	repo := fixture(t, goFiles)
	hidden := addHidden(t)
	cases := []judged{
		{name: "honest fix", edits: map[string]edit{"calc.go": {content: goFixed}}, pass: true, findings: []string{}},
		{name: "gate: flag.CommandLine.Parsed()", verdict: event.Review, fools: true, findings: []string{"calc.go:7"},
			edits: map[string]edit{"calc.go": {content: gateFlagCommandLine}}},
		{name: "gate: runtime under another name", verdict: event.Review, fools: true, findings: []string{"calc.go:4"},
			edits: map[string]edit{"calc.go": {content: gateRuntimeAlias}}},
	}
	for _, c := range cases[1:] {
		if got := programAdd(t, repo, makePatch(t, repo, c.edits)); got != "-1" {
			t.Errorf("control: %s: a program's Add(2, 3) = %s, want the bug's -1", c.name, got)
		}
	}
	judgeAll(t, repo, "go test ./...", []string{hidden}, cases, nil)
}
