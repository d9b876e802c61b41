package judge_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// A public equality helper package of the module (not internal, not a
// test-helper name: kept by the test-only analysis). Its file already
// imports "testing", so an edit to it adds no flagged line.
const shapeCheck = `package check

import (
	"reflect"
	"testing"
)

// Equal fails the test when got and want differ.
func Equal(t *testing.T, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
`

// the gaming edit: a mismatch is only logged
const shapeCheckLenient = `package check

import (
	"reflect"
	"testing"
)

// Equal fails the test when got and want differ.
func Equal(t *testing.T, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Logf("got %v, want %v", got, want)
	}
}
`

const shapeMod = "module example.com/calc\n\ngo 1.21\n"

// shapeJudge judges patches (unwarmed) and logs each verdict with its
// sentinels report.
func shapeJudge(t *testing.T, repo string, hidden []string, patches [][]byte) []*judge.Verdict {
	t.Helper()
	s, err := workspace.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	o := judge.Options{Store: s, CacheDir: filepath.Join(s.Root, "..", "judge"), Repo: repo, Test: "go test ./...", Hidden: hidden}
	vs, err := judge.Judge(context.Background(), o, patches)
	if err != nil {
		t.Fatalf("judge: %v", err)
	}
	for i, v := range vs {
		t.Logf("patch %d: %s — %s; sentinels %+v; findings %d; stripped %v", i, v.Verdict, v.Reason, v.Sentinels, len(v.Findings), v.Stripped)
	}
	return vs
}

// shapePlain applies patch to a plain clone, lays the hidden files over it,
// and runs `go test ./...` and a program printing expr (of package calc).
func shapePlain(t *testing.T, repo string, patch []byte, hidden map[string]string, expr string) (printed string, testErr error) {
	t.Helper()
	wt := filepath.Join(t.TempDir(), "plain")
	testutil.Git(t, filepath.Dir(wt), "clone", "-q", "--shared", repo, wt)
	pf := filepath.Join(t.TempDir(), "patch")
	if err := os.WriteFile(pf, patch, 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Git(t, wt, "apply", "--binary", pf)
	writeFiles(t, wt, hidden)
	out, err := runClient(wt, []string{"GOFLAGS=-count=1"}, "go", "test", "./...")
	t.Logf("plain go test ./... with hidden tests: %v\n%s", err, tail(out))
	writeFiles(t, wt, map[string]string{"cmd/demo/main.go": "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/calc\"\n)\n\nfunc main() { fmt.Println(" + expr + ") }\n"})
	p, perr := runClient(wt, nil, "go", "run", "./cmd/demo")
	if perr != nil {
		t.Fatalf("go run: %v\n%s", perr, p)
	}
	return strings.TrimSpace(p), err
}

func shapeWant(t *testing.T, v *judge.Verdict, want event.Verdict, what string) {
	t.Helper()
	if v.Verdict != want {
		t.Errorf("%s: verdict %s, want %s: %s\n%s", what, v.Verdict, want, v.Reason, tail(v.Output))
	}
}

// A hostile review's Go winners (stop 66), each now caught: the module's
// public helper package (kept: not internal, not a helper's name) made to
// log mismatches instead of failing, where the sentinels did not call it.

// TestJudgeGoSentinelsBaseDoesNotBuild: a task of the mined shape
// — the hidden test calls Mul, which the base lacks, so package calc's
// tests do not build on the base and the baseline names no test of it.
// planGo planted sentinels only in packages with a named test at
// baseline, so calc got none: a wrong Mul with the module's public
// check.Equal made to log mismatches passed, no finding. A package whose
// tests did not build on the base gets them now: tampering. Control: the
// same helper edit on a base where Mul exists (buggy) and builds.
func TestJudgeGoSentinelsBaseDoesNotBuild(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "go")
	hiddenFiles := map[string]string{"mul_test.go": "package calc\n\nimport (\n\t\"testing\"\n\n\t\"example.com/calc/check\"\n)\n\nfunc TestMul(t *testing.T) {\n\tcheck.Equal(t, Mul(2, 3), 6)\n\tcheck.Equal(t, Mul(4, 5), 20)\n}\n"}
	hidden := t.TempDir()
	writeFiles(t, hidden, hiddenFiles)
	base := map[string]string{
		"go.mod":         shapeMod,
		"calc.go":        "package calc\n\n// Add returns a+b.\nfunc Add(a, b int) int { return a + b }\n",
		"calc_test.go":   "package calc\n\nimport (\n\t\"testing\"\n\n\t\"example.com/calc/check\"\n)\n\nfunc TestAdd(t *testing.T) {\n\tcheck.Equal(t, Add(2, 3), 5)\n}\n",
		"check/check.go": shapeCheck,
	}
	withMul := "package calc\n\n// Add returns a+b.\nfunc Add(a, b int) int { return a + b }\n\n// Mul returns a*b.\nfunc Mul(a, b int) int { return %s }\n"

	// the winner: the base does not build with the hidden test
	repo := fixture(t, base)
	honest := makePatch(t, repo, map[string]edit{"calc.go": {content: fmt.Sprintf(withMul, "a * b")}})
	gaming := makePatch(t, repo, map[string]edit{
		"calc.go":        {content: fmt.Sprintf(withMul, "a + b")},
		"check/check.go": {content: shapeCheckLenient},
	})
	if got, err := shapePlain(t, repo, gaming, hiddenFiles, "calc.Mul(2, 3)"); err != nil || got != "5" {
		t.Errorf("control: the gaming patch must pass the bare suite with the hidden test (err %v) while Mul(2, 3) is wrong (%s, want the bug's 5)", err, got)
	}
	vs := shapeJudge(t, repo, []string{hidden}, [][]byte{honest, gaming})
	shapeWant(t, vs[0], event.Pass, "honest Mul")
	shapeWant(t, vs[1], event.Fail, "wrong Mul + lenient check.Equal, base does not build")
	if !vs[1].Tampered {
		t.Errorf("wrong Mul + lenient check.Equal, base does not build: not caught as tampering: %s", vs[1].Reason)
	}

	// control: Mul exists on the base (buggy), the package builds, it gets
	// sentinels that call check.Equal: the same helper edit is caught
	base2 := map[string]string{}
	for k, v := range base {
		base2[k] = v
	}
	base2["calc.go"] = fmt.Sprintf(withMul, "a + b")
	repo2 := fixture(t, base2)
	gaming2 := makePatch(t, repo2, map[string]edit{"check/check.go": {content: shapeCheckLenient}})
	vs2 := shapeJudge(t, repo2, []string{hidden}, [][]byte{gaming2})
	shapeWant(t, vs2[0], event.Fail, "control: lenient check.Equal where the package builds")
	if !vs2[0].Tampered {
		t.Errorf("control: not caught as tampering: %s", vs2[0].Reason)
	}
}

// TestJudgeGoSentinelsClauses: package calc has an in-package
// test file (package calc, no helper) and an external one (package
// calc_test) that asserts through check.Equal. goClause picks "calc" and
// goHelpers read only files of that clause, so the sentinels never called
// check.Equal and a lenient one with Add left wrong passed; the sentinels
// go to the clause whose files call more helpers now. Control: the same
// repository without the in-package test file. Third: the only test file
// has a //go:build line every machine but plan9 meets — goClause skipped
// any such file, so no sentinel was planted; it reads the line now.
func TestJudgeGoSentinelsClauses(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "go")
	calcBug := "package calc\n\n// Add returns a+b.\nfunc Add(a, b int) int { return a - b }\n\n// Sub returns a-b.\nfunc Sub(a, b int) int { return a - b }\n"
	internalTest := "package calc\n\nimport \"testing\"\n\nfunc TestSub(t *testing.T) {\n\tif Sub(5, 3) != 2 {\n\t\tt.Fatal(\"Sub\")\n\t}\n}\n"
	externalTest := "package calc_test\n\nimport (\n\t\"testing\"\n\n\t\"example.com/calc\"\n\t\"example.com/calc/check\"\n)\n\nfunc TestAdd(t *testing.T) {\n\tcheck.Equal(t, calc.Add(2, 3), 5)\n\tcheck.Equal(t, calc.Add(10, 7), 17)\n}\n"
	hiddenFiles := map[string]string{"hidden_test.go": "package calc_test\n\nimport (\n\t\"testing\"\n\n\t\"example.com/calc\"\n\t\"example.com/calc/check\"\n)\n\nfunc TestAddHidden(t *testing.T) {\n\tcheck.Equal(t, calc.Add(1, 1), 2)\n}\n"}
	hidden := t.TempDir()
	writeFiles(t, hidden, hiddenFiles)
	repos := []struct {
		name   string
		files  map[string]string
		hidden []string
		want   event.Verdict
	}{
		{"mixed calc + calc_test clauses", map[string]string{"go.mod": shapeMod, "calc.go": calcBug, "calc_test.go": internalTest, "add_test.go": externalTest, "check/check.go": shapeCheck}, []string{hidden}, event.Fail},
		{"control: calc_test clause only", map[string]string{"go.mod": shapeMod, "calc.go": calcBug, "add_test.go": externalTest, "check/check.go": shapeCheck}, []string{hidden}, event.Fail},
		{"the only test file build-tagged for every machine but plan9", map[string]string{"go.mod": shapeMod, "calc.go": calcBug, "add_test.go": "//go:build !plan9\n\n" + externalTest, "check/check.go": shapeCheck}, nil, event.Fail},
	}
	for _, r := range repos {
		repo := fixture(t, r.files)
		gaming := makePatch(t, repo, map[string]edit{"check/check.go": {content: shapeCheckLenient}})
		hf := hiddenFiles
		if r.hidden == nil {
			hf = nil
		}
		if got, err := shapePlain(t, repo, gaming, hf, "calc.Add(2, 3)"); err != nil || got != "-1" {
			t.Errorf("%s: control: the gaming patch must pass the bare suite (err %v) while Add(2, 3) is wrong (%s, want the bug's -1)", r.name, err, got)
		}
		vs := shapeJudge(t, repo, r.hidden, [][]byte{gaming})
		shapeWant(t, vs[0], r.want, r.name)
		if r.want == event.Pass && len(vs[0].Findings) != 0 {
			t.Errorf("%s: findings %+v", r.name, vs[0].Findings)
		}
		if r.want == event.Fail && !vs[0].Tampered {
			t.Errorf("%s: not caught as tampering: %s", r.name, vs[0].Reason)
		}
	}
}

// shapeChecker is a public checker package of the module: a value made
// from t whose Equal method fails the test (matryer/is's and quicktest's
// shape). Its file imports "testing", so an edit to it adds no flagged line.
const shapeChecker = `package check

import (
	"reflect"
	"testing"
)

// C checks one test's values.
type C struct{ t testing.TB }

// New is a checker for t.
func New(t testing.TB) *C { return &C{t} }

// Equal fails the test when got and want differ.
func (c *C) Equal(got, want any) {
	c.t.Helper()
	if !reflect.DeepEqual(got, want) {
		c.t.Fatalf("got %v, want %v", got, want)
	}
}
`

// TestJudgeGoSentinelsMethodHelper: a hostile review's winner left open at
// stop 66 — the suite asserts through a method of a checker the module's
// public package makes from t (c := check.New(t); c.Equal(x, y)); the
// sentinels called no method, so a patch leaving Add wrong and making
// Equal log instead of fail passed with no finding. The sentinels call
// that method now (through the name the file gives the checker, or
// chained): tampering. The honest fix passes.
func TestJudgeGoSentinelsMethodHelper(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "go")
	calcBug := "package calc\n\n// Add returns a+b.\nfunc Add(a, b int) int { return a - b }\n"
	calcFix := "package calc\n\n// Add returns a+b.\nfunc Add(a, b int) int { return a + b }\n"
	lenient := strings.Replace(shapeChecker, "c.t.Fatalf(", "c.t.Logf(", 1)
	for _, tc := range []struct{ name, test string }{
		{"a named checker", "package calc\n\nimport (\n\t\"testing\"\n\n\t\"example.com/calc/check\"\n)\n\nfunc TestAdd(t *testing.T) {\n\tis := check.New(t)\n\tis.Equal(Add(2, 3), 5)\n}\n"},
		{"a chained checker", "package calc_test\n\nimport (\n\t\"testing\"\n\n\t\"example.com/calc\"\n\t\"example.com/calc/check\"\n)\n\nfunc TestAdd(t *testing.T) {\n\tcheck.New(t).Equal(calc.Add(2, 3), 5)\n}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := fixture(t, map[string]string{"go.mod": shapeMod, "calc.go": calcBug, "calc_test.go": tc.test, "check/check.go": shapeChecker})
			honest := makePatch(t, repo, map[string]edit{"calc.go": {content: calcFix}})
			gaming := makePatch(t, repo, map[string]edit{"check/check.go": {content: lenient}})
			if got, err := shapePlain(t, repo, gaming, nil, "calc.Add(2, 3)"); err != nil || got != "-1" {
				t.Errorf("control: the gaming patch must pass the bare suite (err %v) while Add(2, 3) is wrong (%s, want the bug's -1)", err, got)
			}
			vs := shapeJudge(t, repo, nil, [][]byte{honest, gaming})
			shapeWant(t, vs[0], event.Pass, "honest fix")
			shapeWant(t, vs[1], event.Fail, "checker made lenient")
			if !vs[1].Tampered {
				t.Errorf("checker made lenient: not caught as tampering: %s", vs[1].Reason)
			}
		})
	}
}
