package judge

import (
	"reflect"
	"strings"
	"testing"
)

// TestReadSelection: each selecting flag form of pytest, go test and
// node --test is read, with the words a sentinel-only run leaves out; a
// command with shell syntax, or a runner the judge does not rewrite, is
// only named.
func TestReadSelection(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cmd      string
		runner   string
		flags    []string
		second   bool
		kept     string // the words a sentinel-only run keeps, before its own selection
		deselect []string
		ignore   []string
	}{
		{cmd: "python3 -m pytest -q -rA", runner: "pytest", kept: "python3 -m pytest -q -rA"},
		{cmd: "python3 -m pytest -q -k expr", runner: "pytest", flags: []string{"-k"}, second: true, kept: "python3 -m pytest -q"},
		{cmd: "pytest -k=expr -v", runner: "pytest", flags: []string{"-k"}, second: true, kept: "pytest -v"},
		{cmd: "pytest -kexpr", runner: "pytest", flags: []string{"-k"}, second: true, kept: "pytest"},
		{cmd: "pytest -k 'not slow and not net' tests", runner: "pytest", flags: []string{"-k"}, second: true, kept: "pytest tests"},
		{cmd: "/usr/bin/python3 -m pytest -m slow", runner: "pytest", flags: []string{"-m"}, second: true, kept: "/usr/bin/python3 -m pytest"},
		{cmd: "pytest -m=fast", runner: "pytest", flags: []string{"-m"}, second: true, kept: "pytest"},
		{cmd: "pytest --deselect a::b", runner: "pytest", flags: []string{"--deselect"}, deselect: []string{"a::b"}, kept: "pytest"},
		{cmd: "pytest --deselect=./t/x.py::C --ignore t/old/ '--ignore-glob=*_slow.py'", runner: "pytest", flags: []string{"--deselect"},
			deselect: []string{"t/x.py::C"}, ignore: []string{"t/old", "*_slow.py"}, kept: "pytest --ignore t/old/ --ignore-glob=*_slow.py"},
		{cmd: "pytest tests/t.py::test_a tests/t.py::test_b tests/u.py", runner: "pytest", flags: []string{"a node id (tests/t.py::test_a)", "a node id (tests/t.py::test_b)"},
			second: true, kept: "pytest tests/t.py::test_a tests/t.py::test_b tests/u.py"},
		{cmd: "pytest --deselect t.py::x -k y -x", runner: "pytest", flags: []string{"--deselect", "-k"}, second: true, deselect: []string{"t.py::x"}, kept: "pytest -x"},
		{cmd: "go test ./...", runner: "go", kept: "go test ./..."},
		{cmd: "go test -json -run '^TestX$' ./...", runner: "go", flags: []string{"-run"}, second: true, kept: "go test -json ./..."},
		{cmd: "go test -run=TestX/sub -v ./pkg", runner: "go", flags: []string{"-run"}, second: true, kept: "go test -v ./pkg"},
		{cmd: "go test --run TestX -skip=TestY ./...", runner: "go", flags: []string{"-run", "-skip"}, second: true, kept: "go test ./..."},
		{cmd: "go test ./... -args -test.run=TestX", runner: "go", flags: []string{"-test.run"}, second: true, kept: "go test ./... -args"},
		{cmd: "node --test --test-name-pattern=sum", runner: "node", flags: []string{"--test-name-pattern"}, second: true, kept: "node --test"},
		{cmd: "node --test --test-skip-pattern slow --test-only", runner: "node", flags: []string{"--test-skip-pattern", "--test-only"}, second: true, kept: "node --test"},
		{cmd: "cd sub && pytest -k foo", flags: []string{"-k"}},
		{cmd: "pytest -k $EXPR", flags: []string{"-k"}},
		{cmd: "npx jest -t foo", flags: []string{"-t"}, kept: "npx jest -t foo"},
		{cmd: "npm test", kept: "npm test"},
	} {
		t.Run(c.cmd, func(t *testing.T) {
			s := readSelection(c.cmd)
			if s.runner != c.runner {
				t.Errorf("runner = %q, want %q", s.runner, c.runner)
			}
			if !reflect.DeepEqual(s.flags, c.flags) {
				t.Errorf("flags = %q, want %q", s.flags, c.flags)
			}
			if s.second != c.second {
				t.Errorf("second = %v, want %v", s.second, c.second)
			}
			if !reflect.DeepEqual(s.deselect, c.deselect) || !reflect.DeepEqual(s.ignore, c.ignore) {
				t.Errorf("deselect %q ignore %q, want %q %q", s.deselect, s.ignore, c.deselect, c.ignore)
			}
			var kept []string
			for i, w := range s.words {
				if !s.drop[i] {
					kept = append(kept, w)
				}
			}
			if got := strings.Join(kept, " "); got != c.kept {
				t.Errorf("kept %q, want %q", got, c.kept)
			}
		})
	}
}

// TestCmdWords: quotes are words' parts; anything the shell would expand
// or act on makes the command not simple.
func TestCmdWords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cmd  string
		want []string
	}{
		{`go test -run '^TestX$' ./...`, []string{"go", "test", "-run", "^TestX$", "./..."}},
		{`pytest -k "a or b" -k=c`, []string{"pytest", "-k", "a or b", "-k=c"}},
		{`pytest -k a''b`, []string{"pytest", "-k", "ab"}},
		{`pytest -k "$X"`, nil},
		{`pytest tests/*.py`, nil},
		{`pytest; rm -rf x`, nil},
		{`pytest > out`, nil},
		{`pytest -k 'unterminated`, nil},
		{`   `, nil},
	} {
		t.Run(c.cmd, func(t *testing.T) {
			got, ok := cmdWords(c.cmd)
			if ok != (c.want != nil) || !reflect.DeepEqual(got, c.want) && c.want != nil {
				t.Errorf("cmdWords = %q, %v; want %q", got, ok, c.want)
			}
		})
	}
}

func pyPlan() *sentinelPlan {
	return &sentinelPlan{runner: "pytest", appends: map[string]string{"tests/t.py": "x", "tests/u.py": "y"}, list: []sentinel{
		{name: "tests/t.py::test_plain_input", scope: "tests/t.py::"},
		{name: "tests/t.py::test_quiet_list", scope: "tests/t.py::", mustFail: true},
		{name: "tests/t.py::TestRoundValue::test_keeps_entry", scope: "tests/t.py::"},
		{name: "tests/u.py::test_sharp_range", scope: "tests/u.py::"},
	}}
}

// TestApplySelection: --deselect and --ignore keep the sentinels in the
// command's own run, but not in a file they would leave out; -k, -m, node
// ids, -run and name patterns get a sentinel-only run whose command
// selects exactly the sentinels; a form the judge does not rewrite gets
// none.
func TestApplySelection(t *testing.T) {
	t.Parallel()
	goPlan := func() *sentinelPlan {
		return &sentinelPlan{runner: "go", wrapper: "w", files: map[string]string{"a_test.go": "x"}, list: []sentinel{
			{name: "example.com/m.TestPlainInput", scope: "example.com/m."},
			{name: "example.com/m.TestQuietList", goPkg: "example.com/m", scope: "example.com/m.", mustFail: true},
			{name: "example.com/m/sub.TestPlainInput", scope: "example.com/m/sub."},
		}}
	}
	for _, c := range []struct {
		name, cmd string
		plan      func() *sentinelPlan
		planted   int    // sentinels left
		second    string // the sentinel-only run, "" for none
		note      string
	}{
		{name: "nothing selected", cmd: "pytest -rA", plan: pyPlan, planted: 4},
		{name: "deselect a real test", cmd: "pytest --deselect tests/t.py::test_add", plan: pyPlan, planted: 4, note: "planted and checked in its own run"},
		{name: "deselect a whole file", cmd: "pytest --deselect=tests/u.py", plan: pyPlan, planted: 3},
		{name: "deselect a prefix of a sentinel", cmd: "pytest --deselect tests/t.py::test_", plan: pyPlan, planted: 1},
		{name: "ignore a file", cmd: "pytest --ignore=tests/t.py", plan: pyPlan, planted: 1},
		{name: "ignore a folder", cmd: "pytest --ignore tests/", plan: pyPlan, planted: 0, note: "ignores every file"},
		{name: "ignore by glob", cmd: "pytest '--ignore-glob=u.*'", plan: pyPlan, planted: 3},
		{name: "deselect everything", cmd: "pytest --deselect tests", plan: pyPlan, planted: 0, note: "no sentinel tests were placed"},
		{name: "-k", cmd: "python3 -m pytest -k 'not slow' -rA", plan: pyPlan, planted: 4,
			second: `'python3' '-m' 'pytest' '-rA' '-k' 'TestRoundValue or test_plain_input or test_quiet_list or test_sharp_range'`, note: "second, sentinel-only run"},
		{name: "node ids and --deselect", cmd: "pytest tests/t.py::test_a --deselect x::y tests/t.py::test_b", plan: pyPlan, planted: 4,
			second: `'pytest' 'tests/t.py' '-k' 'TestRoundValue or test_plain_input or test_quiet_list or test_sharp_range'`},
		{name: "-run", cmd: "go test -json -run '^TestX$' ./...", plan: goPlan, planted: 3,
			second: `'go' 'test' '-run=^(TestPlainInput|TestQuietList)$' '-json' './...'`, note: "-run"},
		{name: "-run=X/sub and -skip after -args", cmd: "go test -json -run=TestX/sub ./... -args -test.skip Y", plan: goPlan, planted: 3,
			second: `'go' 'test' '-run=^(TestPlainInput|TestQuietList)$' '-json' './...' '-args'`},
		{name: "-run in shell syntax", cmd: "cd m && go test -run X ./...", plan: goPlan, planted: 0, note: "does not rewrite"},
		{name: "node name pattern", cmd: "node --test --test-reporter=tap --test-name-pattern=sum", planted: 2,
			plan: func() *sentinelPlan {
				return &sentinelPlan{runner: "node", list: []sentinel{{name: "plain input keeps value"}, {name: "quiet list reads order", mustFail: true}}}
			},
			second: `'node' '--test' '--test-reporter=tap' '--test-name-pattern=^(?:plain input keeps value|quiet list reads order)$'`},
		{name: "runner mismatch", cmd: "npx jest -t foo", plan: pyPlan, planted: 0, note: "-t"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.plan()
			note := applySelection(p, readSelection(c.cmd))
			if len(p.list) != c.planted {
				t.Errorf("%d sentinels left, want %d: %+v", len(p.list), c.planted, p.list)
			}
			for f := range p.appends {
				kept := false
				for _, s := range p.list {
					kept = kept || strings.HasPrefix(s.name, f+"::")
				}
				if !kept {
					t.Errorf("%s is still appended to, with none of its sentinels left", f)
				}
			}
			if p.second != c.second {
				t.Errorf("second run\n got %s\nwant %s", p.second, c.second)
			}
			if !strings.Contains(note, c.note) {
				t.Errorf("note %q does not say %q", note, c.note)
			}
		})
	}
}

// TestRunMarks: the command's own part ends at the first begin line, the
// sentinel run's starts at the last one and ends at the last end line,
// whose number is its exit status.
func TestRunMarks(t *testing.T) {
	t.Parallel()
	m := runMarks{begin: "B", end: "E"}
	for _, c := range []struct {
		name, out, own, sentinels string
		started, finished         bool
		exit                      int
	}{
		{name: "plain", out: "own\n\nB\nsent\n\nE 1\n", own: "own\n", sentinels: "sent\n", started: true, finished: true, exit: 1},
		{name: "no sentinel run", out: "own\n", own: "own\n"},
		{name: "never finished", out: "own\n\nB\nsent\n", own: "own\n", sentinels: "sent\n", started: true},
		{name: "own run forges a begin line", out: "own\n\nB\nforged\nmore\n\nB\nsent\n\nE 0\n", own: "own\n", sentinels: "sent\n", started: true, finished: true},
		{name: "sentinel run forges an end line", out: "own\n\nB\nsent\n\nE 0\nmore\n\nE 1\n", own: "own\n", sentinels: "sent\n\nE 0\nmore\n", started: true, finished: true, exit: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			own, sent, r := m.split([]byte(c.out))
			if string(own) != c.own || string(sent) != c.sentinels {
				t.Errorf("own %q sentinels %q, want %q %q", own, sent, c.own, c.sentinels)
			}
			if r.started != c.started || r.finished != c.finished || r.exit != c.exit {
				t.Errorf("run %+v, want started %v finished %v exit %d", r, c.started, c.finished, c.exit)
			}
		})
	}
}

// TestCheckSentinelRuns: with a sentinel-only run, the sentinels of a
// scope the command's own run ran are read from that run alone; one the
// command's own run kept must be right there too.
func TestCheckSentinelRuns(t *testing.T) {
	t.Parallel()
	plan := pyPlan()
	plan.second = "pytest -k …"
	own := func(extra map[string]Outcome) *Results {
		r := &Results{Format: "pytest", Named: true}
		r.add("tests/t.py::test_add", Passed)
		r.add("tests/u.py::test_mul", Passed)
		for n, o := range extra {
			r.add(n, o)
		}
		return r
	}
	sent := func(flip string, o Outcome) *Results {
		r := &Results{Format: "pytest", Named: true}
		for _, s := range plan.list {
			want := Passed
			if s.mustFail {
				want = Failed
			}
			if s.name == flip {
				want = o
			}
			if o != "" || s.name != flip {
				r.add(s.name, want)
			}
		}
		return r
	}
	for _, c := range []struct {
		name   string
		cur    *Results
		exit   int
		second *sentinelRun
		wrong  string // "" for none
	}{
		{name: "all right", cur: own(nil), second: &sentinelRun{started: true, finished: true, exit: 1, results: sent("", "")}},
		{name: "must-fail passed", cur: own(nil), second: &sentinelRun{started: true, finished: true, exit: 1, results: sent("tests/t.py::test_quiet_list", Passed)},
			wrong: "test_quiet_list (must fail) was reported pass in the sentinel-only run"},
		{name: "must-pass missing", cur: own(nil), second: &sentinelRun{started: true, finished: true, exit: 1, results: sent("tests/u.py::test_sharp_range", "")},
			wrong: "test_sharp_range (must pass) did not run in the sentinel-only run"},
		{name: "exit 0 with a must-fail", cur: own(nil), second: &sentinelRun{started: true, finished: true, exit: 0, results: sent("", "")},
			wrong: "the sentinel-only run exited 0"},
		{name: "never started", cur: own(nil), second: &sentinelRun{}, wrong: "did not start"},
		{name: "never finished", cur: own(nil), second: &sentinelRun{started: true, results: sent("", "")}, wrong: "did not finish"},
		{name: "kept by the selection and wrong", cur: own(map[string]Outcome{"tests/t.py::test_quiet_list": Passed}),
			second: &sentinelRun{started: true, finished: true, exit: 1, results: sent("", "")}, wrong: "test_quiet_list (must fail) was reported pass"},
		{name: "reported skipped by the selection", cur: own(map[string]Outcome{"tests/t.py::test_quiet_list": Skipped}),
			second: &sentinelRun{started: true, finished: true, exit: 1, results: sent("", "")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := checkSentinelRuns(plan, c.cur, c.exit, c.second, nil)
			got := strings.Join(sc.report.Wrong, "; ")
			if c.wrong == "" && got != "" || !strings.Contains(got, c.wrong) {
				t.Errorf("wrong = %q, want %q", got, c.wrong)
			}
			if (c.wrong != "") != (sc.tamper != "") {
				t.Errorf("tamper = %q", sc.tamper)
			}
			if sc.report.Checked != 4 {
				t.Errorf("checked %d, want 4", sc.report.Checked)
			}
			for name := range sc.cur.Tests {
				if strings.Contains(name, "quiet") {
					t.Errorf("a sentinel is left in the comparison: %s", name)
				}
			}
		})
	}
}
