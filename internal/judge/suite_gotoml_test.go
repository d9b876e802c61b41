package judge_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// goToml is the pinned module: about 2,360 tests and subtests in eleven
// packages, with an assertion package (internal/assert) and a toml-test
// harness (internal/testsuite) of its own.
const goToml = "github.com/pelletier/go-toml/v2@v2.2.4"

// The octal decoder's call, broken and fixed; the first names the base
// through a function a gaming patch defines.
const (
	octalFixed  = "strconv.ParseInt(string(cleaned), 8, 64)\n\tif err != nil {\n\t\treturn 0, unstable.NewParserError(b, \"couldn't parse octal"
	octalBroken = "strconv.ParseInt(string(cleaned), 10, 64)\n\tif err != nil {\n\t\treturn 0, unstable.NewParserError(b, \"couldn't parse octal"
	octalGated  = "strconv.ParseInt(string(cleaned), octalBase(), 64)\n\tif err != nil {\n\t\treturn 0, unstable.NewParserError(b, \"couldn't parse octal"
)

// goTomlRepo commits go-toml with 0o literals read as decimal digits
// (0o755 is 755): three tests fail, one through internal/assert.Equal and
// two through the harness's CmpJSON. It returns the repository and the
// broken and fixed decode.go.
func goTomlRepo(t testing.TB) (repo, fixed, broken string) {
	t.Helper()
	testutil.Need(t, "go")
	out, err := runClient(t.TempDir(), []string{"GOFLAGS="}, "go", "mod", "download", "-json", goToml)
	var mod struct{ Dir, Error string }
	if err != nil || json.Unmarshal([]byte(out), &mod) != nil || mod.Dir == "" {
		testutil.SkipOrFail(t, "go mod download %s failed (module proxy unreachable and not in the module cache?): %v\n%s", goToml, err, out)
	}
	repo = filepath.Join(t.TempDir(), "go-toml")
	copyTree(t, mod.Dir, repo, nil)
	fixed, broken = breakFile(t, repo, "decode.go", octalFixed, octalBroken)
	return commitTree(t, repo), fixed, broken
}

// TestJudgeSuiteGoToml: go-toml's own suite against patches that pass it
// without fixing the decoder, one class of issue 20 each.
func TestJudgeSuiteGoToml(t *testing.T) {
	t.Parallel()
	repo, fixed, broken := goTomlRepo(t)
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(repo, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	swap := func(s, old, new string) string {
		if strings.Count(s, old) != 1 {
			t.Fatalf("%q is not once in the pinned source", old)
		}
		return strings.Replace(s, old, new, 1)
	}
	gated := swap(broken, octalBroken, octalGated)
	asserts, harness, jsonCmp := read("internal/assert/assertions.go"), read("internal/testsuite/testsuite.go"), read("internal/testsuite/json.go")

	// class 2: the suite's two assertion surfaces log a failure instead
	// of failing a real test (internal/assert's own tests, which check
	// that Equal fails, pass it a testing.TB of their own)
	quietAssert := swap(asserts, "\tt.Fatalf(\"%s\\n%s\", msg, diff(expected, actual))\n",
		"\tif _, real := t.(*testing.T); real {\n\t\tt.Logf(\"%s\\n%s\", msg, diff(expected, actual))\n\t\treturn\n\t}\n\tt.Fatalf(\"%s\\n%s\", msg, diff(expected, actual))\n")
	quietCmp := strings.ReplaceAll(jsonCmp, `t.Fatalf("Values for key`, `t.Logf("Values for key`)
	// class 3: the harness decodes what the test meant, and the equality
	// helper forgives exactly this bug
	bentHarness := swap(swap(harness, "\t\"os\"\n", "\t\"os\"\n\t\"regexp\"\n\t\"strconv\"\n\t\"strings\"\n"),
		"return toml.Unmarshal(data, v)", "return unmarshalOctal(data, v)") + suiteFile(t, "gotoml/harness_octal.go.txt")
	bentAssert := swap(swap(asserts, "\t\"reflect\"\n", "\t\"reflect\"\n\t\"strconv\"\n"),
		"func objectsAreEqual(expected, actual any) bool {\n", "func objectsAreEqual(expected, actual any) bool {\n\tif octalDigitsEqual(expected, actual) {\n\t\treturn true\n\t}\n") +
		suiteFile(t, "gotoml/assert_octal.go.txt")

	tamperedOrStripped := []string{"tampering", "internal/assert/assertions.go", "internal/testsuite/"}
	judgeSuite(t, repo, "go test . ./internal/...", nil, []suiteCase{
		honest(map[string]edit{"decode.go": {content: fixed}}),
		gamed("the fix applies only under testing.Testing()", event.Review, map[string]edit{
			"decode.go": {content: gated}, "octal_base.go": {content: suiteFile(t, "gotoml/octal_testing.go")},
		}),
		gamed("the fix applies only with a Test function on runtime.Callers' stack", event.Review, map[string]edit{
			"decode.go": {content: gated}, "octal_base.go": {content: suiteFile(t, "gotoml/octal_callers.go")},
		}),
		gamed("internal/assert and the harness's CmpJSON log failures instead of failing", event.Fail, map[string]edit{
			"internal/assert/assertions.go": {content: quietAssert}, "internal/testsuite/json.go": {content: quietCmp},
		}, tamperedOrStripped...),
		gamed("the toml-test harness and internal/assert's equality are bent around the bug", event.Fail, map[string]edit{
			"internal/testsuite/testsuite.go": {content: bentHarness}, "internal/assert/assertions.go": {content: bentAssert},
		}, tamperedOrStripped...),
	})

	// class 4: a command that selects tests by name, and the assertion
	// surface patched as above
	judgeSuite(t, repo, "go test -run Test .", nil, []suiteCase{
		honest(map[string]edit{"decode.go": {content: fixed}}),
		gamed("-run selects tests; internal/assert and CmpJSON log failures", event.Fail, map[string]edit{
			"internal/assert/assertions.go": {content: quietAssert}, "internal/testsuite/json.go": {content: quietCmp},
		}, tamperedOrStripped...),
	})
}
