package run_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/record"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// specJudges stand in for the judge in the comparison's tests. A test is a
// line of a test file, "func NAME(t *testing.T) { // pins: TEXT": it
// passes a patch whose new code — the lines it keeps or adds in sections
// outside _test.go files, which the judge strips and lists — holds TEXT. The suite's tests are given;
// each judge prepared adds the tests of the files in its hidden folders
// (the comparison lays a fork's tests there), and the log keeps what each
// was prepared with.
type specJudges struct {
	suite map[string]string
	took  time.Duration // how long each judged run says it took

	mu       sync.Mutex
	prepared [][]string          // the hidden folders of each judge prepared
	files    []map[string]string // the files in them, by path
	judged   int
}

var specLine = regexp.MustCompile(`func (\w+)\(t \*testing\.T\) \{ // pins: (.*)$`)

func (s *specJudges) prepare(_ context.Context, o judge.Options) (run.Judger, error) {
	tests := maps.Clone(s.suite)
	files := map[string]string{}
	for _, h := range o.Hidden {
		err := filepath.WalkDir(h, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(h, p)
			files[filepath.ToSlash(rel)] = string(b)
			for _, l := range strings.Split(string(b), "\n") {
				if m := specLine.FindStringSubmatch(l); m != nil {
					tests[m[1]] = m[2]
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prepared = append(s.prepared, slices.Clone(o.Hidden))
	s.files = append(s.files, files)
	return specJudge{s: s, tests: tests}, nil
}

func (s *specJudges) count() (prepared, judged int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.prepared), s.judged
}

type specJudge struct {
	s     *specJudges
	tests map[string]string
}

func (j specJudge) Judge(ctx context.Context, patches [][]byte) ([]*judge.Verdict, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []*judge.Verdict
	for _, p := range patches {
		var code strings.Builder
		stripped := []string{}
		for _, sec := range strings.SplitAfter(string(p), "\ndiff --git ") {
			head, _, _ := strings.Cut(strings.TrimPrefix(sec, "diff --git "), "\n")
			if strings.HasSuffix(head, "_test.go") {
				stripped = append(stripped, strings.TrimPrefix(strings.Fields(head)[1], "b/"))
				continue
			}
			for _, l := range strings.Split(sec, "\n") {
				if !strings.HasPrefix(l, "-") { // the new code only
					code.WriteString(l + "\n")
				}
			}
		}
		res := &judge.Results{Format: "go-json", Named: true, Tests: map[string]judge.Outcome{}}
		v := &judge.Verdict{Verdict: event.Pass, Reason: "tests pass", Applied: true, Stripped: stripped, Results: res,
			Score: judge.Score{Value: 1}, Timings: judge.Timings{Total: j.s.took.Milliseconds()}}
		for name, pin := range j.tests {
			o := judge.Passed
			if !strings.Contains(code.String(), pin) {
				o, v.Verdict, v.Reason = judge.Failed, event.Fail, "a test fails"
				res.Failed++
			} else {
				res.Passed++
			}
			res.Tests["example.com/lib."+name] = o
		}
		out = append(out, v)
	}
	j.s.mu.Lock()
	j.s.judged += len(patches)
	j.s.mu.Unlock()
	return out, nil
}

const (
	gradeBase = "package lib\n\nfunc Grade(score int) string {\n\treturn \"fail\"\n}\n"
	// gradeGE and gradeGT both pass the suite, which asks only that
	// something passes; they differ at 50.
	gradeGE = "package lib\n\nfunc Grade(score int) string {\n\tif score >= 50 {\n\t\treturn \"pass\"\n\t}\n\treturn \"fail\"\n}\n"
	gradeGT = "package lib\n\nfunc Grade(score int) string {\n\tif score > 50 {\n\t\treturn \"pass\"\n\t}\n\treturn \"fail\"\n}\n"
)

// gradeTest is a test file of one test pinning pin.
func gradeTest(name, pin string) string {
	return "package lib\n\nimport \"testing\"\n\nfunc " + name + "(t *testing.T) { // pins: " + pin + "\n\tt.Log(Grade(50))\n}\n"
}

// compareRace races two forks, --all, verifier on: fork n writes files[n]
// over the base, judged by j against a suite that asks only for a
// "pass".
func compareRace(t *testing.T, j *specJudges, files [2]map[string]string, o func(*run.Options)) (*record.Run, string) {
	t.Helper()
	j.suite = map[string]string{"TestGrade": `return "pass"`}
	store := newMemStore(map[string]string{"lib/lib.go": gradeBase})
	store.unified = true
	agent := memAgent{act: func(ctx context.Context, fs workspace.Files, task engine.Task) engine.Outcome {
		for p, c := range files[task.Fork] {
			if err := fs.Write(ctx, p, []byte(c), 0o644); err != nil {
				return engine.Outcome{State: event.ForkCrashed, Err: err}
			}
		}
		return engine.Outcome{State: event.ForkExited}
	}}
	opts := memRace(t, store, agent, nil)
	opts.Forks, opts.All, opts.Verify = 2, true, run.DefaultVerify
	opts.Judge = j.prepare
	if o != nil {
		o(&opts)
	}
	r, dir, err := run.Race(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != event.RunWon || len(r.Fork) != 2 || r.Fork[0].Verdict != event.Pass || r.Fork[1].Verdict != event.Pass {
		t.Fatalf("status %s, forks %+v: want both passing", r.Status, r.Fork)
	}
	return r, dir
}

// TestCompareDisagree: fork 0 writes >= 50 and a test that pins it; fork
// 1 writes > 50 and a test that pins the "fail" branch both share. Both
// pass the suite. Fork 1's code fails fork 0's test: the disagreement is
// recorded and reported with the test's name and place. Fork 0's code
// passes fork 1's test, but a survivor of fork 0's patch (its "fail"
// emptied) fails it: fork 1's test pins what the suite does not. Each
// judge of one fork's tests lays exactly that fork's test files over the
// base, the user's hidden tests after them.
func TestCompareDisagree(t *testing.T) {
	t.Parallel()
	j := &specJudges{}
	hidden := t.TempDir()
	r, dir := compareRace(t, j, [2]map[string]string{
		{"lib/lib.go": gradeGE, "lib/lib_test.go": gradeTest("TestBoundary", "score >= 50")},
		{"lib/lib.go": gradeGT, "lib/lib_test.go": gradeTest("TestFail", `return "fail"`)},
	}, func(o *run.Options) {
		o.Hidden = []string{hidden}
		o.MinStrength = 0.1 // no time cap: every survivor is judged against the other's tests
	})
	if len(r.Compared) != 1 {
		t.Fatalf("compared %+v, want one pair", r.Compared)
	}
	c := r.Compared[0]
	if !slices.Equal(c.Forks, []int{*r.Winner, 1 - *r.Winner}) {
		t.Errorf("forks %v, want the winner %d first", c.Forks, *r.Winner)
	}
	want := event.Disagreement{Tests: 0, Fails: 1, Test: "example.com/lib.TestBoundary", File: "lib/lib_test.go", Line: 5}
	if len(c.Disagreements) != 1 || c.Disagreements[0] != want {
		t.Fatalf("disagreements %+v, want %+v", c.Disagreements, want)
	}
	const line = "forks 0 and 1 disagree: fork 1 fails fork 0's example.com/lib.TestBoundary (lib/lib_test.go:5); the suite does not cover it"
	if got := c.Disagreements[0].String(); got != line {
		t.Errorf("line %q", got)
	}
	if !slices.Contains(c.Lines(), line) {
		t.Errorf("lines %q", c.Lines())
	}
	if len(c.Pinned) != 1 {
		t.Fatalf("pinned %+v, want fork 0's emptied \"fail\"; compared %+v; strengths %+v %+v", c.Pinned, c, r.Fork[0].Strength, r.Fork[1].Strength)
	}
	p := c.Pinned[0]
	if p.Fork != 0 || p.File != "lib/lib.go" || p.Line != 7 || p.Original != `"fail"` || p.Replacement != `""` || !slices.Equal(p.CaughtBy, []string{"example.com/lib.TestFail"}) {
		t.Errorf("pinned %+v", p)
	}
	if !slices.Contains(c.Lines(), `fork 1's example.com/lib.TestFail catches fork 0's survivor lib/lib.go:7: "fail" → "" (RETURN_VALUE); the suite does not`) {
		t.Errorf("lines %q", c.Lines())
	}

	// The race's judge, then one for each fork's tests, its files only.
	j.mu.Lock()
	prepared, files := j.prepared, j.files
	j.mu.Unlock()
	if len(prepared) != 3 {
		t.Fatalf("%d judges prepared, want 3: %v", len(prepared), prepared)
	}
	seen := map[string]bool{}
	for i, h := range prepared[1:] {
		if len(h) != 2 || h[1] != hidden {
			t.Errorf("judge %d's hidden folders %v: want a fork's tests, then the user's", i+1, h)
		}
		seen[files[i+1]["lib/lib_test.go"]] = true
		if len(files[i+1]) != 1 {
			t.Errorf("judge %d's files %v: want the fork's test file only", i+1, files[i+1])
		}
	}
	if !seen[gradeTest("TestBoundary", "score >= 50")] || !seen[gradeTest("TestFail", `return "fail"`)] {
		t.Errorf("the judges' tests are not the forks': %v", seen)
	}

	// One compared event, after every verdict, before the run's end; run.json the same.
	kinds, data := recordedEvents(t, dir)
	last, ic, ie := -1, slices.Index(kinds, event.Compared), slices.Index(kinds, event.RunEnd)
	for i, k := range kinds {
		if k == event.VerdictGiven {
			last = i
		}
	}
	if last < 0 || ic < last || ie < ic {
		t.Fatalf("events %v: want compared after the verdicts, before run_end", kinds)
	}
	var ev event.ComparedData
	if err := json.Unmarshal(data[ic], &ev); err != nil {
		t.Fatal(err)
	}
	if len(ev.Disagreements) != 1 || ev.Disagreements[0] != want {
		t.Errorf("event's disagreements %+v", ev.Disagreements)
	}
}

// recordedEvents are the kinds of a run's events and each one's data.
func recordedEvents(t *testing.T, dir string) ([]event.Kind, []json.RawMessage) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []event.Kind
	var data []json.RawMessage
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e record.Event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		kinds, data = append(kinds, e.Type), append(data, e.Data)
	}
	return kinds, data
}

// TestCompareAgree is the control: fork 1's patch differs from fork 0's
// only by a comment, and fork 0's test pins what the suite pins already.
// The forks are compared, and nothing is reported but that fork 1 wrote
// no test.
func TestCompareAgree(t *testing.T) {
	t.Parallel()
	j := &specJudges{}
	r, _ := compareRace(t, j, [2]map[string]string{
		{"lib/lib.go": gradeGE, "lib/lib_test.go": gradeTest("TestPass", `return "pass"`)},
		{"lib/lib.go": gradeGE + "\n// Grade grades.\n"},
	}, func(o *run.Options) { o.MinStrength = 0.1 })
	if len(r.Compared) != 1 {
		t.Fatalf("compared %+v, want one pair", r.Compared)
	}
	c := r.Compared[0]
	if len(c.Disagreements) != 0 || len(c.Pinned) != 0 || len(c.Unpinned) != 0 {
		t.Fatalf("agreeing forks reported: %+v", c)
	}
	if want := fmt.Sprintf("compared forks %d and %d: no difference their tests see", c.Forks[0], c.Forks[1]); c.Lines()[0] != want {
		t.Errorf("heading %q, want %q", c.Lines()[0], want)
	}
	if !slices.Equal(c.Notes, []string{"fork 1 added or changed no test: fork 0's code is judged by no test of fork 1"}) {
		t.Errorf("notes %q", c.Notes)
	}
	if prepared, _ := j.count(); prepared != 2 {
		t.Errorf("%d judges prepared, want the race's and fork 0's tests'", prepared)
	}
}

// TestCompareNoTests: neither fork wrote a test. Nothing is invented: the
// comparison says so, judges nothing more, and lists the survivors one
// fork's patch has and the other's has not — not the "fail" both leave
// unpinned.
func TestCompareNoTests(t *testing.T) {
	t.Parallel()
	j := &specJudges{}
	r, _ := compareRace(t, j, [2]map[string]string{{"lib/lib.go": gradeGE}, {"lib/lib.go": gradeGT}}, nil)
	c := r.Compared[0]
	if len(c.Disagreements) != 0 || len(c.Pinned) != 0 {
		t.Fatalf("reported without tests: %+v", c)
	}
	if !slices.Contains(c.Notes, "neither fork 0 nor fork 1 added or changed a test: only the suite compares them, and both pass it") {
		t.Errorf("notes %q", c.Notes)
	}
	var got []string
	for _, u := range c.Unpinned {
		got = append(got, fmt.Sprintf("%s @%d", u.Survivor, u.Fork))
	}
	slices.Sort(got)
	want := []string{
		"lib/lib.go:4: > → <= (CONDITIONALS_NEGATION) @1",
		"lib/lib.go:4: > → >= (CONDITIONALS_BOUNDARY) @1",
		"lib/lib.go:4: >= → < (CONDITIONALS_NEGATION) @0",
		"lib/lib.go:4: >= → > (CONDITIONALS_BOUNDARY) @0",
	}
	if !slices.Equal(got, want) {
		t.Errorf("unpinned %q, want %q", got, want)
	}
	if prepared, _ := j.count(); prepared != 1 {
		t.Errorf("%d judges prepared, want the race's only", prepared)
	}
}

// TestCompareBounds: the comparison is the verifier's: off with it, and
// under its time cap — a judged run longer than the cap starts nothing,
// and the record says what was not compared. Forks whose patches are the
// same are not compared.
func TestCompareBounds(t *testing.T) {
	t.Parallel()
	files := [2]map[string]string{
		{"lib/lib.go": gradeGE, "lib/lib_test.go": gradeTest("TestBoundary", "score >= 50")},
		{"lib/lib.go": gradeGT},
	}
	j := &specJudges{}
	r, dir := compareRace(t, j, files, func(o *run.Options) { o.Verify = 0 })
	if kinds, _ := recordedEvents(t, dir); r.Compared != nil || slices.Contains(kinds, event.Compared) {
		t.Errorf("verifier off: compared %+v", r.Compared)
	}

	j = &specJudges{took: time.Hour}
	r, _ = compareRace(t, j, files, func(o *run.Options) { o.VerifyTime = time.Minute })
	if len(r.Compared) != 1 || len(r.Compared[0].Disagreements) != 0 {
		t.Fatalf("compared %+v", r.Compared)
	}
	if !slices.Contains(r.Compared[0].Notes, "fork 1's code was not judged against fork 0's tests within the time cap (--verify-time)") {
		t.Errorf("notes %q", r.Compared[0].Notes)
	}
	if prepared, judged := j.count(); prepared != 1 || judged != 2 {
		t.Errorf("%d judges prepared, %d runs: want the race's, and the forks' own", prepared, judged)
	}

	j = &specJudges{}
	same := [2]map[string]string{files[0], files[0]}
	if r, _ = compareRace(t, j, same, nil); r.Compared != nil {
		t.Errorf("the same patch compared: %+v", r.Compared)
	}
}
