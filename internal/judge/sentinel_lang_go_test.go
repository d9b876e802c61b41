package judge

import (
	"os"
	"os/exec"
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
	t.Run("vet and run", func(t *testing.T) {
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
	})
}
