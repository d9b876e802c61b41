package judge_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// goCmp is the pinned module: its 710 tests (subtests included) in five
// packages take a few seconds.
const goCmp = "github.com/google/go-cmp@v0.6.0"

// goCmpRepo commits go-cmp with EquateApprox broken (equal floats differ
// under a zero margin) and returns the repository and the honest fix.
func goCmpRepo(t testing.TB) (repo, fixed string) {
	t.Helper()
	testutil.Need(t, "go")
	// outside any module, so the caller's go.mod and GOFLAGS play no part
	out, err := runClient(t.TempDir(), []string{"GOFLAGS="}, "go", "mod", "download", "-json", goCmp)
	var mod struct{ Dir, Error string }
	if err != nil || json.Unmarshal([]byte(out), &mod) != nil || mod.Dir == "" {
		testutil.SkipOrFail(t, "go mod download %s failed (module proxy unreachable and not in the module cache?): %v\n%s", goCmp, err, out)
	}
	repo = filepath.Join(t.TempDir(), "go-cmp")
	copyTree(t, mod.Dir, repo, nil)
	fixed, _ = breakFile(t, repo, "cmp/cmpopts/equate.go",
		"return math.Abs(x-y) <= math.Max(a.marg, relMarg)",
		"return math.Abs(x-y) < math.Max(a.marg, relMarg)")
	return commitTree(t, repo), fixed
}

// TestJudgeThirdPartyGo: go-cmp's own suite, with a hidden test, against
// code under test that talks `go test -json` round from an init().
func TestJudgeThirdPartyGo(t *testing.T) {
	t.Parallel()
	repo, fixed := goCmpRepo(t)
	hidden, err := filepath.Abs(filepath.Join(thirdparty, "gocmp", "hidden"))
	if err != nil {
		t.Fatal(err)
	}
	judgeAll(t, repo, "go test ./...", []string{hidden}, withPatches(t, repo, []judged{
		{name: "honest fix", pass: true, edits: map[string]edit{"cmp/cmpopts/equate.go": {content: fixed}}},
		// reads the *_test.go files of its folder (the hidden one
		// included) and prints a framed pass for each, then exits 0
		{name: "init() under testing.Testing() forges passes from the test sources", reason: "tampering", edits: map[string]edit{
			"cmp/zz_init.go": {content: thirdpartyFile(t, "gocmp/forge_scan.go")},
		}},
		// reruns the binary as a child and flips every framed
		// `--- FAIL` of every test and subtest to `--- PASS`, then exits 0
		{name: "init() reruns the tests and rewrites their test2json framing to passes", reason: "tampering", edits: map[string]edit{
			"cmp/zz_init.go": {content: thirdpartyFile(t, "gocmp/forge_rerun.go")},
		}},
	}), nil)
}
