package mutant_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/lab/mutant"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

func newStore(t *testing.T) *workspace.Store {
	t.Helper()
	s, err := workspace.Open(filepath.Join(t.TempDir(), "state"))
	if err != nil {
		t.Fatal(err)
	}
	testutil.OpenOverlayWork(t, s.Root)
	return s
}

func repoOf(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Git(t, dir, "init", "-q")
	testutil.Git(t, dir, "add", "-A")
	testutil.Git(t, dir, "commit", "-qm", "base")
	return dir
}

const calc = `package m

// Max returns the larger of a and b.
func Max(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// Count counts n down to zero.
func Count(n int) int {
	c := 0
	for n > 0 {
		n--
		c++
	}
	return c
}

// Greet greets.
func Greet(s string) string { return "hi " + s }

// Double has no test.
func Double(x int) int { return x * 2 }
`

const calcTest = `package m

import "testing"

func TestMax(t *testing.T) {
	if Max(1, 2) != 2 || Max(3, 1) != 3 {
		t.Fatal("max")
	}
}

func TestCount(t *testing.T) {
	if Count(3) != 3 {
		t.Fatal("count")
	}
}

func TestGreet(t *testing.T) {
	if Greet("x") != "hi x" {
		t.Fatal("greet")
	}
}
`

// A module whose mutants' fates are known: each status once at least,
// each checked against the mutant that must get it.
func TestMutantsClassifyGo(t *testing.T) {
	testutil.Need(t, "go", "git")
	repo := repoOf(t, map[string]string{"go.mod": "module example.com/m\n\ngo 1.22\n", "calc.go": calc, "calc_test.go": calcTest})
	before := testutil.Git(t, repo, "status", "--porcelain", "--ignored")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Timeout 0: the default, three times the baseline plus 10 s, grows
	// with a loaded machine's slower builds; a fixed 10 s let a slow
	// build of a mutant that must finish end as a Timeout
	rep, err := mutant.Run(ctx, mutant.Options{Store: newStore(t), Repo: repo, Test: "go test -count=1 ./...", Forks: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		line, orig, repl string
		status           mutant.Status
	}{
		{"if a > b", ">", ">=", mutant.Survived}, // equivalent at a == b: the tests cannot tell
		{"if a > b", ">", "<=", mutant.Killed},
		{"n--", "--", "++", mutant.Timeout},
		{"n--", "n--", ";", mutant.Timeout},
		{`"hi " + s`, "+", "-", mutant.CompileError},
		{"x * 2", "*", "/", mutant.NoCoverage},
		{"c++", "++", "--", mutant.Killed},
	}
	for _, w := range want {
		found := false
		for _, r := range rep.Results {
			line := strings.Split(calc, "\n")[r.Line-1]
			if r.File == "calc.go" && strings.Contains(line, w.line) && r.Original == w.orig && r.Replacement == w.repl {
				found = true
				if r.Status != w.status {
					t.Errorf("%q: %q→%q is %s, want %s (%s)", w.line, w.orig, w.repl, r.Status, w.status, r.Reason)
				}
			}
		}
		if !found {
			t.Errorf("no mutant %q→%q on %q", w.orig, w.repl, w.line)
		}
	}
	var sum bytes.Buffer
	rep.WriteSummary(&sum, 10)
	if !strings.Contains(sum.String(), "calc.go") || !strings.Contains(sum.String(), "+	if a >= b {") {
		t.Errorf("summary lacks the file or the surviving diff:\n%s", sum.String())
	}
	var js bytes.Buffer
	if err := rep.WriteStryker(&js); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		SchemaVersion string
		Files         map[string]struct {
			Language, Source string
			Mutants          []struct {
				ID, MutatorName, Status string
				Location                struct{ Start, End struct{ Line, Column int } }
			}
		}
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	f := doc.Files["calc.go"]
	if doc.SchemaVersion == "" || f.Language != "go" || f.Source != calc || len(f.Mutants) != len(rep.Results) || f.Mutants[0].Location.Start.Line == 0 {
		t.Errorf("Stryker report incomplete: %s", js.String())
	}
	if after := testutil.Git(t, repo, "status", "--porcelain", "--ignored"); after != before {
		t.Errorf("the repository changed:\n%s", after)
	}
	t.Logf("%d mutants in %.1fs (baseline %.1fs)\n%s", len(rep.Results), rep.Seconds, rep.Baseline, sum.String())
}
