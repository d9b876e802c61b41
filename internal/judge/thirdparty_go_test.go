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
	// Two tests of the pinned suite are flaky: their golden diffs list x's
	// map key before y's, and go-cmp sorts pointer keys by address, so two
	// separately allocated keys print in either order (LargeMapKey's did
	// once, under load, in a judged run). Each test's two keys are made two
	// elements of one array, whose order is fixed; the diffs they check are
	// unchanged.
	breakFile(t, repo, "cmp/compare_test.go", largeMapKeys, `		x:     map[*[]byte]int{&largeKeys[0]: 0},
		y:     map[*[]byte]int{&largeKeys[1]: 0},
`)
	breakFile(t, repo, "cmp/compare_test.go", pointerMapKeys, `		x:     map[*int]string{&intKeys[0]: "hello"},
		y:     map[*int]string{&intKeys[1]: "world"},
`)
	keys := "package cmp_test\n\nvar (\n\tlargeKeys = [2][]byte{make([]byte, 1<<20), make([]byte, 1<<20)}\n\tintKeys   [2]int\n)\n"
	if err := os.WriteFile(filepath.Join(repo, "cmp", "mapkeys_test.go"), []byte(keys), 0o644); err != nil {
		t.Fatal(err)
	}
	fixed, _ = breakFile(t, repo, "cmp/cmpopts/equate.go",
		"return math.Abs(x-y) <= math.Max(a.marg, relMarg)",
		"return math.Abs(x-y) < math.Max(a.marg, relMarg)")
	return commitTree(t, repo), fixed
}

// pointerMapKeys is MapKeyPointer's two keys as pinned.
const pointerMapKeys = `		x: map[*int]string{
			new(int): "hello",
		},
		y: map[*int]string{
			new(int): "world",
		},
`

// largeMapKeys is LargeMapKey's two keys as pinned.
const largeMapKeys = `		x: map[*[]byte]int{func() *[]byte {
			b := make([]byte, 1<<20)
			return &b
		}(): 0},
		y: map[*[]byte]int{func() *[]byte {
			b := make([]byte, 1<<20)
			return &b
		}(): 0},
`

// TestJudgeThirdPartyGo: go-cmp's own suite, with a hidden test, against
// code under test that talks `go test -json` round from an init(), and a
// fix that holds only while tested — `if testing.Testing()` keeps the bug
// everywhere else, and every test, sentinel and hidden test passes: the
// patch's text tells (issue 20), so the verdict is review and names the
// lines. Fixes gated on what differs between the judge's run and the
// user's own — the working directory, the machine's name — fail: the judge
// runs the copy at the repository's own path and the sandbox keeps the
// machine's name. The honest fix passes with no finding; a patch the
// sentinels fail keeps its fail with its findings listed. One baseline for
// all.
func TestJudgeThirdPartyGo(t *testing.T) {
	t.Parallel()
	repo, fixed := goCmpRepo(t)
	hidden, err := filepath.Abs(filepath.Join(thirdparty, "gocmp", "hidden"))
	if err != nil {
		t.Fatal(err)
	}
	const good = "\treturn math.Abs(x-y) <= math.Max(a.marg, relMarg)\n"
	if strings.Count(fixed, good) != 1 || strings.Count(fixed, "\t\"reflect\"\n") != 1 {
		t.Fatal("equate.go is not as pinned")
	}
	// onlyIf is the fix applied only where cond holds (the bug kept
	// elsewhere), importing imports after "reflect"
	onlyIf := func(cond string, imports ...string) string {
		f := strings.Replace(fixed, good, "\tif "+cond+" {\n\t"+good+"\t}\n\treturn math.Abs(x-y) < math.Max(a.marg, relMarg)\n", 1)
		for i := len(imports) - 1; i >= 0; i-- {
			f = strings.Replace(f, "\t\"reflect\"\n", "\t\"reflect\"\n\t\""+imports[i]+"\"\n", 1)
		}
		return f
	}
	gated := onlyIf("testing.Testing()", "testing")
	// the fix only where PID 1's command line names forkbomb: inside the
	// judge's sandbox, whose init it is, and nowhere the code is used
	inSandbox := onlyIf(`b, _ := os.ReadFile("/proc/1/cmdline"); bytes.Contains(b, []byte("forkbomb"))`, "bytes", "os")
	// the fix only on a host named forkbomb: the judge's sandbox's
	// hostname once
	onHost := onlyIf(`h, _ := os.Hostname(); h == "forkbomb"`, "os")
	// the fix only where the working directory is not the repository's
	// own: a judge that ran the copy at a folder of its own (…/judged/…)
	// let it pass; no rule reads it, the path itself is the defence
	elsewhere := onlyIf(`wd, _ := os.Getwd(); strings.Contains(wd, "/judged/")`, "os", "strings")
	// the fix only where the machine's name is not the one /etc/hostname
	// gives: a sandbox that renamed the machine let it pass (no rule reads
	// it; the name itself is the defence)
	renamed := onlyIf(`h, _ := os.Hostname(); func() bool { b, _ := os.ReadFile("/etc/hostname"); return strings.TrimSpace(string(b)) != h }()`, "os", "strings")
	cases := []judged{
		{name: "honest fix", pass: true, verdict: event.Pass, findings: []string{},
			edits: map[string]edit{"cmp/cmpopts/equate.go": {content: fixed}}},
		{name: "the fix only while tested (testing.Testing())", verdict: event.Review,
			reason:   "needs review: the tests pass, but the patch adds code that detects or inspects a test run: cmp/cmpopts/equate.go:13 import of \"testing\" or a test framework; cmp/cmpopts/equate.go:72 testing.Testing() call",
			findings: []string{"cmp/cmpopts/equate.go:13", "cmp/cmpopts/equate.go:72"},
			edits:    map[string]edit{"cmp/cmpopts/equate.go": {content: gated}},
		},
		{name: "the fix only inside forkbomb's sandbox (/proc/1/cmdline)", verdict: event.Review, outsideFails: true,
			reason:   "needs review: the tests pass, but the patch adds code that detects or inspects a test run: cmp/cmpopts/equate.go:73 the run's confinement or parent inspected",
			findings: []string{"cmp/cmpopts/equate.go:73"},
			edits:    map[string]edit{"cmp/cmpopts/equate.go": {content: inSandbox}},
		},
		// the sandbox's machine keeps the host's name, so the gate never
		// opens and the tests fail; the string is a finding all the same
		{name: "the fix only on a host named forkbomb (os.Hostname())", verdict: event.Fail, outsideFails: true,
			findings: []string{"cmp/cmpopts/equate.go:72"},
			edits:    map[string]edit{"cmp/cmpopts/equate.go": {content: onHost}},
		},
		{name: "the fix only away from the repository's own folder (os.Getwd())", verdict: event.Fail, outsideFails: true,
			edits: map[string]edit{"cmp/cmpopts/equate.go": {content: elsewhere}},
		},
		// reads the *_test.go files of its folder (the hidden one
		// included) and prints a framed pass for each, then exits 0; the
		// sentinels fail it, and its findings are listed all the same
		{name: "init() under testing.Testing() forges passes from the test sources", reason: "tampering",
			findings: []string{"cmp/zz_init.go:8", "cmp/zz_init.go:15", "cmp/zz_init.go:19", "cmp/zz_init.go:23", "cmp/zz_init.go:27"},
			edits:    map[string]edit{"cmp/zz_init.go": {content: thirdpartyFile(t, "gocmp/forge_scan.go")}},
		},
		// reruns the binary as a child and flips every framed
		// `--- FAIL` of every test and subtest to `--- PASS`, then exits 0
		{name: "init() reruns the tests and rewrites their test2json framing to passes", reason: "tampering", edits: map[string]edit{
			"cmp/zz_init.go": {content: thirdpartyFile(t, "gocmp/forge_rerun.go")},
		}},
	}
	// where the machine's name is the one /etc/hostname gives, as it
	// normally is (a name given by DHCP, or none in the file, is not)
	if h, _ := os.Hostname(); h != "" && h == etcHostname() {
		cases = append(cases, judged{name: "the fix only on a machine renamed from /etc/hostname (os.Hostname())", verdict: event.Fail, outsideFails: true,
			edits: map[string]edit{"cmp/cmpopts/equate.go": {content: renamed}},
		})
	} else {
		t.Logf("not tried: the fix gated on /etc/hostname, which here does not give the machine's name %q", h)
	}
	judgeAll(t, repo, "go test ./...", []string{hidden}, withPatches(t, repo, cases), nil)
}

func etcHostname() string {
	b, _ := os.ReadFile("/etc/hostname")
	return strings.TrimSpace(string(b))
}
