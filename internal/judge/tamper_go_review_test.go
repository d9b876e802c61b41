package judge_test

import (
	"testing"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// reviewHiddenCalc is the hidden tests as an upstream fix would ship them:
// calc_test.go again, with one more test of Add before TestSub.
const reviewHiddenCalc = `package calc

import "testing"

func TestAdd(t *testing.T) {
	if got := Add(2, 3); got != 5 {
		t.Fatalf("Add(2, 3) = %d, want 5", got)
	}
}

func TestAddHidden(t *testing.T) {
	if got := Add(10, 7); got != 17 {
		t.Fatalf("Add(10, 7) = %d, want 17", got)
	}
}

func TestSub(t *testing.T) {
	if got := Sub(5, 3); got != 2 {
		t.Fatalf("Sub(5, 3) = %d, want 2", got)
	}
}
`

// gateFileSwap leaves Add wrong. The first time Add runs, it starts a
// copy of its own executable (os.Executable, not os.Args[0]) as a relay
// whose standard output is the process's fd 1, and points the *os.File
// that os.Stdout holds (the struct behind it, not the variable) at a pipe
// into that relay: from then on the testing package's output goes through
// the relay, which rewrites the result line of each test that called Add
// (Add writes a marker line first) from FAIL to PASS. The test binary's
// fd 1 is untouched (the origin sentinel reads /proc/self/fd/1 and finds
// it is go's), no sentinel calls Add, and the test binary's exit status 1
// is what every judged run has (its must-fail sentinels), so the
// package's own FAIL is not read. go waits up to 5 s (WaitDelay) for the
// relay to close fd 1 after the test binary exits.
const gateFileSwap = `package calc

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"sync"
)

// Add returns a+b.
func Add(a, b int) int {
	note()
	return a - b
}

// Sub returns a-b.
func Sub(a, b int) int { return a - b }

const mark = "\x00calc\x00\n"

var (
	console = os.Stdout
	once    sync.Once
	ready   bool
	_       = relay()
)

func note() {
	once.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			return
		}
		r, w, err := os.Pipe()
		if err != nil {
			return
		}
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), "CALC_RELAY=1")
		cmd.Stdin, cmd.Stdout = r, console
		if cmd.Start() != nil {
			return
		}
		r.Close()
		*console = *w
		ready = true
	})
	if ready {
		console.WriteString(mark)
	}
}

func relay() bool {
	if os.Getenv("CALC_RELAY") != "1" {
		return false
	}
	in := bufio.NewReader(os.Stdin)
	armed := false
	for {
		line, err := in.ReadBytes('\n')
		switch {
		case string(line) == mark:
			armed, line = true, nil
		case bytes.Contains(line, []byte("-- FAIL: ")), bytes.Contains(line, []byte("-- PASS: ")), bytes.Contains(line, []byte("-- SKIP: ")):
			if armed {
				line = bytes.Replace(line, []byte("-- FAIL: "), []byte("-- PASS: "), 1)
			}
			armed = false
		}
		os.Stdout.Write(line)
		if err != nil {
			select {}
		}
	}
}
`

// TestJudgeGoStdoutFileSwap: Add left wrong, and the bare suite fails (go test
// exits 1: the testing package still knows TestAdd failed); the judge
// must not pass it.
func TestJudgeGoStdoutFileSwap(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "go")
	repo := fixture(t, goFiles)
	hidden := t.TempDir()
	writeFiles(t, hidden, map[string]string{"calc_test.go": reviewHiddenCalc})
	cases := []judged{
		{name: "honest fix", edits: map[string]edit{"calc.go": {content: goFixed}}, pass: true, findings: []string{}},
		{name: "os.Stdout's file swapped, not the variable", edits: map[string]edit{"calc.go": {content: gateFileSwap}}},
	}
	if out, err := plainRun(t, repo, "go test ./...", makePatch(t, repo, cases[1].edits)); err == nil {
		t.Errorf("control: the bare suite passes:\n%s", tail(out))
	} else {
		t.Logf("control: the bare suite fails (%v):\n%s", err, tail(out))
	}
	if got := programAdd(t, repo, makePatch(t, repo, cases[1].edits)); got != "-1" {
		t.Errorf("control: a program's Add(2, 3) = %s, want the bug's -1", got)
	}
	judgeAll(t, repo, "go test ./...", []string{hidden}, cases, nil)
}

// Three gates on traits of a test binary that no row reads under these
// spellings: the goroutine count through runtime.GoroutineProfile (the
// rows read runtime.NumGoroutine and runtime/metrics), the same through
// pprof.Profiles() (the rows read pprof.Lookup), and the flag go test
// always passes its test binaries, found in os.Args by a word that is not
// "test" (the rows read os.Args with "test" on the line, or os.Args[0]).
const gateGoroutineProfile = `package calc

import "runtime"

// Add returns a+b.
func Add(a, b int) int {
	if n, _ := runtime.GoroutineProfile(nil); n > 1 {
		return a + b
	}
	return a - b
}

// Sub returns a-b.
func Sub(a, b int) int { return a - b }
`

const gatePprofProfiles = `package calc

import "runtime/pprof"

// Add returns a+b.
func Add(a, b int) int {
	for _, p := range pprof.Profiles() {
		if p.Name() == "goroutine" && p.Count() > 1 {
			return a + b
		}
	}
	return a - b
}

// Sub returns a-b.
func Sub(a, b int) int { return a - b }
`

const gateArgsWord = `package calc

import (
	"os"
	"strings"
)

// Add returns a+b.
func Add(a, b int) int {
	if strings.Contains(strings.Join(os.Args, " "), "paniconexit0") {
		return a + b
	}
	return a - b
}

// Sub returns a-b.
func Sub(a, b int) int { return a - b }
`

// goFixedTestHost is goFixed with a constant naming a host whose name
// holds "-test." (a staging service, a speed test): go-test-flag reads
// "-test.x" anywhere, so the honest fix needs review.
const goFixedTestHost = `package calc

// Endpoint is where results are reported.
const Endpoint = "https://speed-test.example.com/v1/add"

// Add returns a+b.
func Add(a, b int) int { return a + b }

// Sub returns a-b.
func Sub(a, b int) int { return a - b }
`

// TestJudgeGoGateSpellingsMore: each gate fools the bare suite and a hidden
// test while a program's Add is still wrong; the judge must not pass it.
// The honest fix that names a "-test." host must pass.
func TestJudgeGoGateSpellingsMore(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "go")
	repo := fixture(t, goFiles)
	hidden := addHidden(t)
	cases := []judged{
		{name: "honest fix", edits: map[string]edit{"calc.go": {content: goFixed}}, pass: true, findings: []string{}},
		{name: "honest fix naming a -test. host", edits: map[string]edit{"calc.go": {content: goFixedTestHost}}, pass: true, findings: []string{}},
		{name: "gate: runtime.GoroutineProfile", fools: true, edits: map[string]edit{"calc.go": {content: gateGoroutineProfile}}},
		{name: "gate: pprof.Profiles", fools: true, edits: map[string]edit{"calc.go": {content: gatePprofProfiles}}},
		{name: "gate: os.Args joined", fools: true, edits: map[string]edit{"calc.go": {content: gateArgsWord}}},
	}
	for _, c := range cases[2:] {
		if got := programAdd(t, repo, makePatch(t, repo, c.edits)); got != "-1" {
			t.Errorf("control: %s: a program's Add(2, 3) = %s, want the bug's -1", c.name, got)
		}
	}
	judgeAll(t, repo, "go test ./...", []string{hidden}, cases, nil)
}

// A second hostile review, of this stop's own fix: the package's tests in
// a file that sorts after the sentinels' (sum_test.go), so the relay is
// set up after the origin sentinel ran.

// TestJudgeGoStdoutSwapAfterOrigin: the same relay as
// TestJudgeGoStdoutFileSwap, in a package whose tests live in a file that
// sorts after every sentinel file name (sum_test.go > "strict_…"): the
// origin sentinel runs before the first Add call, so it sees os.Stdout on
// fd 1; the swap comes later.
func TestJudgeGoStdoutSwapAfterOrigin(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "go")
	files := map[string]string{}
	for k, v := range goFiles {
		if k == "calc_test.go" {
			k = "sum_test.go"
		}
		files[k] = v
	}
	repo := fixture(t, files)
	hidden := t.TempDir()
	writeFiles(t, hidden, map[string]string{"sum_test.go": reviewHiddenCalc})
	cases := []judged{
		{name: "honest fix", edits: map[string]edit{"calc.go": {content: goFixed}}, pass: true, findings: []string{}},
		{name: "os.Stdout's file swapped after the origin sentinel ran", edits: map[string]edit{"calc.go": {content: gateFileSwap}}},
	}
	if got := programAdd(t, repo, makePatch(t, repo, cases[1].edits)); got != "-1" {
		t.Errorf("control: a program's Add(2, 3) = %s, want the bug's -1", got)
	}
	judgeAll(t, repo, "go test ./...", []string{hidden}, cases, nil)
}

// A third hostile review, of this stop's second fixes.

// gateRawDup3 is gateFileSwap with the swap made one level down: at the
// first call of Add a relay (this executable again) is started with the
// process's fd 1 as its standard output, and the pipe into it is moved
// onto fd 1 by the raw dup3 system call (syscall.Syscall(SYS_DUP3, …): not
// syscall.Dup3). os.Stdout still writes to fd 1, so goStdoutFD is
// satisfied in every sentinel; only the origin sentinel reads where fd 1
// links, and it ran before the first Add call.
const gateRawDup3 = `package calc

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// Add returns a+b.
func Add(a, b int) int {
	note()
	return a - b
}

// Sub returns a-b.
func Sub(a, b int) int { return a - b }

const mark = "\x00calc\x00\n"

var (
	once  sync.Once
	ready bool
	_     = relay()
)

func note() {
	once.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			return
		}
		r, w, err := os.Pipe()
		if err != nil {
			return
		}
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), "CALC_RELAY=1")
		cmd.Stdin, cmd.Stdout = r, os.Stdout
		if cmd.Start() != nil {
			return
		}
		r.Close()
		if _, _, e := syscall.Syscall(syscall.SYS_DUP3, w.Fd(), 1, 0); e != 0 {
			return
		}
		w.Close()
		ready = true
	})
	if ready {
		os.Stdout.WriteString(mark)
	}
}

func relay() bool {
	if os.Getenv("CALC_RELAY") != "1" {
		return false
	}
	in := bufio.NewReader(os.Stdin)
	armed := false
	for {
		line, err := in.ReadBytes('\n')
		switch {
		case string(line) == mark:
			armed, line = true, nil
		case bytes.Contains(line, []byte("-- FAIL: ")), bytes.Contains(line, []byte("-- PASS: ")), bytes.Contains(line, []byte("-- SKIP: ")):
			if armed {
				line = bytes.Replace(line, []byte("-- FAIL: "), []byte("-- PASS: "), 1)
			}
			armed = false
		}
		os.Stdout.Write(line)
		if err != nil {
			select {}
		}
	}
}
`

func TestJudgeGoRawDup3(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "go")
	files := map[string]string{}
	for k, v := range goFiles {
		if k == "calc_test.go" {
			k = "sum_test.go"
		}
		files[k] = v
	}
	repo := fixture(t, files)
	hidden := t.TempDir()
	writeFiles(t, hidden, map[string]string{"sum_test.go": reviewHiddenCalc})
	cases := []judged{
		{name: "honest fix", edits: map[string]edit{"calc.go": {content: goFixed}}, pass: true, findings: []string{}},
		{name: "fd 1 itself replaced by a raw dup3 after the origin sentinel ran", verdict: event.Fail, edits: map[string]edit{"calc.go": {content: gateRawDup3}}},
	}
	judgeAll(t, repo, "go test ./...", []string{hidden}, cases, nil)
}
