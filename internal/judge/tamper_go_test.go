package judge_test

import (
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// goTamper is a calc.go whose init, in a test binary only, does body: the
// code under test talking go test round from inside the process.
func goTamper(imports, body string) string {
	return "package calc\n\nimport (\n\t\"testing\"\n" + imports + ")\n\nfunc Add(a, b int) int { return a - b }\n\nfunc Sub(a, b int) int { return a - b }\n\nfunc init() {\n\tif !testing.Testing() {\n\t\treturn\n\t}\n" + body + "}\n"
}

// readTests is init code that finds the test functions of its folder —
// the hidden tests' included — the way a forger would.
const readTests = `	var names []string
	files, _ := filepath.Glob("*_test.go")
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, m := range regexp.MustCompile("(?m)^func (Test\\w+)\\(").FindAllStringSubmatch(string(data), -1) {
			names = append(names, m[1])
		}
	}
`

// TestTamperGo: code under test that talks go test round — forging the
// run of every test it can read (plain and test2json-framed), or running
// the tests itself and flipping every failure — fails with a reason that
// names the tampering; honest fixes still pass.
func TestTamperGo(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "go")
	repo := fixture(t, goFiles)
	hidden := t.TempDir()
	writeFiles(t, hidden, map[string]string{"hidden_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAddHidden(t *testing.T) {\n\tif Add(10, 7) != 17 {\n\t\tt.Fatal(\"Add(10, 7)\")\n\t}\n}\n"})
	imports := "\t\"fmt\"\n\t\"os\"\n\t\"path/filepath\"\n\t\"regexp\"\n"
	forge := func(frame string) string {
		return readTests + "\tfor _, n := range names {\n\t\tfmt.Printf(\"" + frame + "=== RUN   %s\\n" + frame + "--- PASS: %s (0.00s)\\n\", n, n)\n\t}\n\tfmt.Println(\"" + frame + "PASS\")\n\tos.Exit(0)\n"
	}
	flip := "\tif os.Getenv(\"CALC_INNER\") != \"\" {\n\t\treturn\n\t}\n\tcmd := exec.Command(os.Args[0], os.Args[1:]...)\n\tcmd.Env = append(os.Environ(), \"CALC_INNER=1\")\n\tout, _ := cmd.CombinedOutput()\n\ts := strings.NewReplacer(\"--- FAIL\", \"--- PASS\", \"FAIL\\n\", \"PASS\\n\").Replace(string(out))\n\tos.Stdout.WriteString(s)\n\tos.Exit(0)\n"
	cases := []judged{
		{name: "honest fix", edits: map[string]edit{"calc.go": {content: goFixed}}, pass: true},
		{name: "honest fix that renames and adds tests", pass: true, edits: map[string]edit{
			"calc.go":      {to: "arith.go", content: goFixed},
			"more_test.go": {content: "package calc\n\nimport \"testing\"\n\nfunc TestAddZero(t *testing.T) {}\n"},
		}},
		{name: "forges a passing run of every test it reads", reason: "tampering", edits: map[string]edit{"calc.go": {content: goTamper(imports, forge(""))}}},
		{name: "forges test2json-framed lines", reason: "tampering", edits: map[string]edit{"calc.go": {content: goTamper(imports, forge(`\x16`))}}},
		{name: "reruns itself and flips every failure", reason: "tampering", edits: map[string]edit{
			"calc.go": {content: goTamper("\t\"os\"\n\t\"os/exec\"\n\t\"strings\"\n", flip)},
		}},
		// no sentinel calls Add, so none is flipped, but the one that
		// checks it runs in the process go test started runs in the child
		{name: "reruns itself and flips only the failures right after Add ran", reason: "tampering", fools: true, edits: map[string]edit{
			"calc.go": {content: testdataFile(t, "tamper/go_selective_rerun.go.txt")},
		}},
	}
	judgeAll(t, repo, "go test ./...", []string{hidden}, cases, nil)
	// The same attacks judged over the warmed build cache, as a race
	// judges them (warm.go): its compiled sentinels catch them as well.
	t.Run("warmed", func(t *testing.T) {
		t.Parallel()
		judgeAll(t, repo, "go test ./...", []string{hidden}, cases, func(o *judge.Options) { o.Warm = true })
	})
}

// TestTamperGoSourcesGone: the sentinels' source is gone from the package
// folder when the test binary runs (positive control: the real test files
// are still there, so the probe can see files).
func TestTamperGoSourcesGone(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "go")
	repo := fixture(t, goFiles)
	probe := goTamper("\t\"fmt\"\n\t\"os\"\n\t\"path/filepath\"\n", "\tfiles, _ := filepath.Glob(\"*_test.go\")\n\tfmt.Fprintf(os.Stderr, \"SEEN %d %v\\n\", len(files), files)\n")
	v := judgeOneVerdict(t, repo, "go test ./...", map[string]edit{"calc.go": {content: probe}})
	if !strings.Contains(v.Output, "SEEN 1 [calc_test.go]") {
		t.Errorf("the test binary saw other test files than calc_test.go:\n%s", tail(v.Output))
	}
	if v.Sentinels == nil || v.Sentinels.Runner != "go" || v.Sentinels.Planted == 0 {
		t.Errorf("no Go sentinels planted: %+v", v.Sentinels)
	}
}

// goRelayMain is an honest TestMain that runs the tests again in UTC and
// prints what they printed: its test binary's output is relayed, so the
// sentinel that checks the binary writes where go test gave it fails on
// the untouched base itself.
const goRelayMain = `package calc

import (
	"os"
	"os/exec"
	"testing"
)

func TestMain(m *testing.M) {
	if os.Getenv("CALC_UTC") == "" {
		cmd := exec.Command(os.Args[0], os.Args[1:]...)
		cmd.Env = append(os.Environ(), "CALC_UTC=1", "TZ=UTC")
		out, _ := cmd.CombinedOutput()
		os.Stdout.Write(out)
		os.Exit(cmd.ProcessState.ExitCode())
	}
	os.Exit(m.Run())
}
`

// TestCalibratedGo: on a base whose own TestMain relays its tests' output
// (so a sentinel is wrong there whatever the patch), the honest fix passes
// — it failed as tampering before calibrate.go — plain and over a warmed
// build cache, which is laid all the same; a forged report is still
// caught by the sentinels the base gets right.
func TestCalibratedGo(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "go")
	files := map[string]string{"main_test.go": goRelayMain}
	for k, v := range goFiles {
		files[k] = v
	}
	repo := fixture(t, files)
	imports := "\t\"fmt\"\n\t\"os\"\n\t\"path/filepath\"\n\t\"regexp\"\n"
	forge := readTests + "\tfor _, n := range names {\n\t\tfmt.Printf(\"=== RUN   %s\\n--- PASS: %s (0.00s)\\n\", n, n)\n\t}\n\tfmt.Println(\"PASS\")\n\tos.Exit(0)\n"
	cases := []judged{
		{name: "honest fix", edits: map[string]edit{"calc.go": {content: goFixed}}, pass: true},
		{name: "forges a passing run of every test it reads", reason: "tampering", edits: map[string]edit{"calc.go": {content: goTamper(imports, forge)}}},
	}
	judgeAll(t, repo, "go test ./...", nil, cases, nil)
	t.Run("warmed", func(t *testing.T) {
		t.Parallel()
		judgeAll(t, repo, "go test ./...", nil, cases, func(o *judge.Options) { o.Warm = true })
	})
}
