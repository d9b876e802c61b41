package judge

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// goLangFiles: a module whose packages test through t.Fatalf, through an
// assertion helper package of the module (a generic one, an interface{}
// one, and one whose shape the judge cannot be sure of), and from an
// external _test package.
var goLangFiles = map[string]string{
	"go.mod":                      "module example.com/m\n\ngo 1.21\n",
	"internal/assert/assert.go":   "package assert\n\nimport (\n\t\"reflect\"\n\t\"testing\"\n)\n\n// Equal fails t when got != want.\nfunc Equal[T comparable](t testing.TB, got, want T) {\n\tt.Helper()\n\tif got != want {\n\t\tt.Fatalf(\"got %v, want %v\", got, want)\n\t}\n}\n\n// DeepEqual fails t when got and want differ.\nfunc DeepEqual(t *testing.T, got, want interface{}, msg ...string) {\n\tt.Helper()\n\tif !reflect.DeepEqual(got, want) {\n\t\tt.Errorf(\"got %v, want %v\", got, want)\n\t}\n}\n\n// EqualLen fails t when s is not n long.\nfunc EqualLen(t *testing.T, n int, s string) {\n\tt.Helper()\n\tif len(s) != n {\n\t\tt.Errorf(\"len %d, want %d\", len(s), n)\n\t}\n}\n",
	"calc/calc.go":                "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
	"calc/calc_test.go":           "package calc\n\nimport (\n\t\"testing\"\n\n\tck \"example.com/m/internal/assert\"\n)\n\nfunc TestAdd(t *testing.T) {\n\tck.Equal(t, Add(2, 3), 5)\n\tck.DeepEqual(t, []int{Add(1, 0)}, []int{1})\n\tck.EqualLen(t, 3, \"abc\")\n}\n",
	"plain/plain.go":              "package plain\n\nfunc Twice(x int) int { return 2 * x }\n",
	"plain/plain_test.go":         "package plain\n\nimport \"testing\"\n\nfunc TestTwice(t *testing.T) {\n\tif Twice(2) != 4 {\n\t\tt.Fatal(\"Twice\")\n\t}\n}\n",
	"ext/ext.go":                  "package ext\n\nfunc Name() string { return \"ext\" }\n",
	"ext/ext_test.go":             "package ext_test\n\nimport (\n\t\"testing\"\n\n\t\"example.com/m/ext\"\n\t\"example.com/m/internal/assert\"\n)\n\nfunc TestName(t *testing.T) {\n\tt.Run(\"sub\", func(st *testing.T) { assert.Equal(st, ext.Name(), \"ext\") })\n}\n",
	"internal/assert/use_test.go": "package assert\n\nimport \"testing\"\n\nfunc TestSelf(t *testing.T) { Equal(t, 1, 1) }\n",
}

// TestPlanGoLanguage: Go sentinels report through t.Fatalf, t.Errorf,
// t.Error and t.Fatal on every kind of value, and through the module's
// helpers the package's tests call when their declaration makes the call
// certain to compile — only comparable values to a helper that may use
// ==; a helper of another shape is left out and the note says so. The
// generated files pass go vet, and go test gives every sentinel the
// outcome it must have.
func TestPlanGoLanguage(t *testing.T) {
	t.Parallel()
	base := &Results{Format: "go-test-json", Named: true}
	for _, n := range []string{"calc.TestAdd", "plain.TestTwice", "ext.TestName", "internal/assert.TestSelf"} {
		pkg, _, _ := strings.Cut(n, ".")
		base.add("example.com/m/"+n, Passed)
		base.add("example.com/m/"+pkg+" (package)", Passed)
	}
	tree, p := plantIn(t, goLangFiles, base, "go test ./...")
	for _, tc := range []struct {
		dir       string
		want, not []string
	}{
		{"calc", []string{"package calc\n", "\"example.com/m/internal/assert\"", ".Equal(t, \"", ".DeepEqual(t, ", "t.Fatalf(", "t.Errorf(", "t.Error(\"the slices", "t.Fatal(\"the maps", "reflect\"\n"}, []string{"EqualLen", ".Equal(t, []int{", ".DeepEqual(t, map["}},
		{"plain", []string{"package plain\n", "t.Fatalf("}, []string{"internal/assert"}},
		{"ext", []string{"package ext_test\n", ".Equal(t, "}, nil},
		{"internal/assert", []string{"package assert\n"}, []string{"\"example.com/m/internal/assert\""}}, // no import of itself
	} {
		t.Run(tc.dir, func(t *testing.T) {
			var src string
			for f, s := range p.files {
				if strings.HasPrefix(f, tc.dir+"/") && !strings.Contains(f[len(tc.dir)+1:], "/") {
					src = s
				}
			}
			if src == "" {
				t.Fatalf("no sentinel file in %s: %v", tc.dir, p.files)
			}
			for _, w := range tc.want {
				if !strings.Contains(src, w) {
					t.Errorf("no %q in:\n%s", w, src)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(src, w) {
					t.Errorf("%q in:\n%s", w, src)
				}
			}
		})
	}
	if !strings.Contains(p.note, "ck.EqualLen") || strings.Contains(p.note, "ck.Equal ") {
		t.Errorf("note %q does not name (only) the helper left out", p.note)
	}
	t.Run("vet and run", func(t *testing.T) { vetAndRunGo(t, tree, p) })
}

// vetAndRunGo checks a planted Go tree passes go vet and that go test
// gives every sentinel the outcome it must.
func vetAndRunGo(t *testing.T, tree string, p *sentinelPlan) {
	t.Helper()
	testutil.Need(t, "go")
	env := append(os.Environ(), "GOFLAGS=", "GOTOOLCHAIN=local", "GOWORK=off")
	vet := exec.Command("go", "vet", "./...")
	vet.Dir, vet.Env = tree, env
	if out, err := vet.CombinedOutput(); err != nil {
		t.Fatalf("go vet: %v\n%s", err, out)
	}
	run := exec.Command("go", "test", "-json", "-count=1", "./...")
	run.Dir, run.Env = tree, env
	out, _ := run.CombinedOutput()
	r := parseGoJSON(out)
	if r == nil {
		t.Fatalf("no results:\n%s", out)
	}
	for _, s := range p.list {
		if want := map[bool]Outcome{false: Passed, true: Failed}[s.mustFail]; r.Tests[s.name] != want {
			t.Errorf("%s: %v, want %v", s.name, r.Tests[s.name], want)
		}
	}
	if t.Failed() {
		t.Logf("%s", out)
	}
}

// TestGoOriginSentinel: run through the judge's -exec wrapper, the
// sentinel that checks its test binary writes to the standard output go
// test gave it passes on an honest package and on one that reruns the test
// binary with the output passed straight through (as an honest TestMain
// may), and fails where the package's code reruns the test binary and
// relays what the child printed — even when the child rewrites the
// wrapper's variable to its own fd 1, since the go command does not hold
// the child's pipe — or pipes its own fd 1 through a filter process: ways
// of rewriting results that spare every sentinel by rewriting only the
// failures that follow a call of the code under test.
func TestGoOriginSentinel(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "go")
	const head = "package plain\n\nimport (\n\t\"os\"\n\t\"os/exec\"\n\t\"strconv\"\n\t\"strings\"\n\t\"syscall\"\n)\n\nfunc Twice(x int) int { return 2 * x }\n\nvar _, _, _ = syscall.Dup, strconv.Itoa, strings.Cut\n\nfunc init() {\n"
	// the child sets every variable that names the parent's fd 1 to its own
	forge := "\tif os.Getenv(\"PLAIN_CHILD\") != \"\" {\n\t\tparent, _ := os.Readlink(\"/proc/\" + strconv.Itoa(os.Getppid()) + \"/fd/1\")\n\t\town, _ := os.Readlink(\"/proc/self/fd/1\")\n" +
		"\t\tfor _, kv := range os.Environ() {\n\t\t\tif k, v, _ := strings.Cut(kv, \"=\"); v == parent {\n\t\t\t\tos.Setenv(k, own)\n\t\t\t}\n\t\t}\n\t\treturn\n\t}\n"
	rerun := "\tif os.Getenv(\"PLAIN_CHILD\") != \"\" {\n\t\treturn\n\t}\n\tcmd := exec.Command(os.Args[0], os.Args[1:]...)\n\tcmd.Env = append(os.Environ(), \"PLAIN_CHILD=1\")\n"
	cases := []struct {
		name, init string
		caught     bool
	}{
		{"honest", "\t_ = exec.Command\n\t_ = os.Getpid\n", false},
		{"reruns itself, its output passed straight through", rerun + "\tcmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr\n\tcmd.Run()\n\tos.Exit(cmd.ProcessState.ExitCode())\n", false},
		{"reruns itself and relays what the child printed", rerun + "\tout, _ := cmd.CombinedOutput()\n\tos.Stdout.Write(out)\n\tos.Exit(cmd.ProcessState.ExitCode())\n", true},
		{"reruns itself, relays the child, and the child rewrites the wrapper's word", forge + rerun[strings.Index(rerun, "\tcmd :="):] + "\tout, _ := cmd.CombinedOutput()\n\tos.Stdout.Write(out)\n\tos.Exit(cmd.ProcessState.ExitCode())\n", true},
		{"pipes its fd 1 through a filter", "\torig, err := syscall.Dup(1)\n\tif err != nil {\n\t\treturn\n\t}\n\tr, w, err := os.Pipe()\n\tif err != nil {\n\t\treturn\n\t}\n\tcmd := exec.Command(\"cat\")\n\tcmd.Stdin, cmd.Stdout = r, os.NewFile(uintptr(orig), \"out\")\n\tif cmd.Start() != nil {\n\t\treturn\n\t}\n\tr.Close()\n\tsyscall.Dup2(int(w.Fd()), 1)\n\tw.Close()\n", true},
	}
	origin := regexp.MustCompile(`func (Test\w+)\(t \*q[A-Z]+\.T\) \{\n\tq[A-Z]+\(t\)\n\}`)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			base := &Results{Format: "go-test-json", Named: true}
			base.add("example.com/m/plain.TestTwice", Passed)
			base.add("example.com/m/plain (package)", Passed)
			files := map[string]string{
				"go.mod":              "module example.com/m\n\ngo 1.21\n",
				"plain/plain.go":      head + c.init + "}\n",
				"plain/plain_test.go": goLangFiles["plain/plain_test.go"],
			}
			tree, p := plantIn(t, files, base, "go test ./...")
			var name string
			for _, src := range p.files {
				if m := origin.FindStringSubmatch(src); m != nil {
					name = "example.com/m/plain." + m[1]
				}
			}
			if name == "" || p.wrapper == "" {
				t.Fatalf("no origin sentinel or no wrapper: %q\n%v", p.wrapper, p.files)
			}
			w := filepath.Join(t.TempDir(), "go-exec")
			if err := os.WriteFile(w, []byte(p.wrapper), 0o755); err != nil {
				t.Fatal(err)
			}
			run := exec.Command("go", "test", "-json", "-count=1", "-exec="+w, "./...")
			run.Dir, run.Env = tree, append(os.Environ(), "GOFLAGS=", "GOTOOLCHAIN=local", "GOWORK=off")
			out, _ := run.CombinedOutput()
			r := parseGoJSON(out)
			if r == nil {
				t.Fatalf("no results:\n%s", out)
			}
			for _, s := range p.list {
				want := map[bool]Outcome{false: Passed, true: Failed}[s.mustFail]
				if c.caught && !s.mustFail {
					want = Failed // every must-pass sentinel checks the output (goStdoutFD), the origin one among them
				}
				if r.Tests[s.name] != want {
					t.Errorf("%s: %v, want %v", s.name, r.Tests[s.name], want)
				}
			}
			if t.Failed() {
				t.Logf("%s", out)
			}
		})
	}
}

// TestPlanGoMethodHelper: a package's tests that assert through a method of
// a value the module's constructor makes from t (c := check.New(t);
// c.Equal(x, y), matryer/is's and quicktest's shape) get sentinels calling
// that method, chained or through the name the file gives it — a hostile
// review's winner was such a public helper made to log instead of fail —
// and a method whose declaration does not make the call certain (it
// returns a value, or the constructor takes more than t) is left out and
// named in the note. The generated files pass go vet and every sentinel
// has the outcome it must.
func TestPlanGoMethodHelper(t *testing.T) {
	t.Parallel()
	check := "package check\n\nimport (\n\t\"reflect\"\n\t\"testing\"\n)\n\n// C checks one test's values.\ntype C struct{ t testing.TB }\n\n// New is a checker for t.\nfunc New(t testing.TB, opts ...string) *C { return &C{t} }\n\n// Equal fails the test when got and want differ.\nfunc (c *C) Equal(got, want any, msg ...string) {\n\tc.t.Helper()\n\tif !reflect.DeepEqual(got, want) {\n\t\tc.t.Fatalf(\"got %v, want %v\", got, want)\n\t}\n}\n\n// EqualBool says whether got and want are equal.\nfunc (c C) EqualBool(got, want any) bool { return reflect.DeepEqual(got, want) }\n\n// V is a value checker.\ntype V struct{ t *testing.T }\n\n// Val is a checker by value.\nfunc Val(t *testing.T) V { return V{t} }\n\n// Equal fails the test when got != want.\nfunc (v V) Equal(got, want interface{}) {\n\tv.t.Helper()\n\tif got != want {\n\t\tv.t.Errorf(\"got %v, want %v\", got, want)\n\t}\n}\n\n// Two needs more than t.\nfunc Two(t *testing.T, name string) *C { return &C{t} }\n"
	files := map[string]string{
		"go.mod":            "module example.com/m\n\ngo 1.21\n",
		"check/check.go":    check,
		"calc/calc.go":      "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
		"calc/calc_test.go": "package calc\n\nimport (\n\t\"testing\"\n\n\tck \"example.com/m/check\"\n)\n\nfunc TestAdd(t *testing.T) {\n\tc := ck.New(t)\n\tc.Equal(Add(2, 3), 5)\n\t_ = c.EqualBool(Add(1, 1), 2)\n\tck.Two(t, \"x\").Equal(Add(0, 0), 0)\n}\n",
		"val/val.go":        "package val\n\nfunc Name() string { return \"val\" }\n",
		"val/val_test.go":   "package val\n\nimport (\n\t\"testing\"\n\n\t\"example.com/m/check\"\n)\n\nfunc TestName(t *testing.T) {\n\tcheck.Val(t).Equal(Name(), \"val\")\n}\n",
	}
	base := &Results{Format: "go-test-json", Named: true}
	for _, n := range []string{"calc.TestAdd", "val.TestName"} {
		pkg, _, _ := strings.Cut(n, ".")
		base.add("example.com/m/"+n, Passed)
		base.add("example.com/m/"+pkg+" (package)", Passed)
	}
	tree, p := plantIn(t, files, base, "go test ./...")
	src := func(dir string) string {
		for f, s := range p.files {
			if strings.HasPrefix(f, dir+"/") && !strings.Contains(f[len(dir)+1:], "/") {
				return s
			}
		}
		t.Fatalf("no sentinel file in %s: %v", dir, p.files)
		return ""
	}
	calc, val := src("calc"), src("val")
	for _, w := range []string{"\"example.com/m/check\"", ".New(t)\n", ".Equal(\""} {
		if !strings.Contains(calc, w) {
			t.Errorf("calc: no %q in:\n%s", w, calc)
		}
	}
	for _, w := range []string{".Val(t)\n", ".Equal(\""} {
		if !strings.Contains(val, w) {
			t.Errorf("val: no %q in:\n%s", w, val)
		}
	}
	for _, w := range []string{"EqualBool", ".Two(", ".Equal([]"} {
		if strings.Contains(calc, w) {
			t.Errorf("calc: %q in:\n%s", w, calc)
		}
	}
	if !strings.Contains(p.note, "c.EqualBool (check.New)") || !strings.Contains(p.note, "….Equal (check.Two)") || strings.Contains(p.note, "c.Equal (") {
		t.Errorf("note %q does not name (only) the methods left out", p.note)
	}
	vetAndRunGo(t, tree, p)
}
