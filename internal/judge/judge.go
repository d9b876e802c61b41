package judge

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// ErrCannotJudge means the judge itself could not run: a bad repository,
// a test command that does not exist, a sandbox that cannot start.
var ErrCannotJudge = errors.New("cannot judge")

// Options say what to judge against. Store holds the pid 1 and the
// throwaway forks; CacheDir the baselines.
type Options struct {
	Store    *workspace.Store
	CacheDir string
	Repo     string
	Rev      string
	Test     string        // the user's test command, run with /bin/sh -c
	Hidden   []string      // folders laid over each judged copy (never seen by forks)
	Timeout  time.Duration // per test run
	Strip    StripOptions
	Parallel int // default: the number of cores

	goEnv []string // found once: GOCACHE, GOMODCACHE
}

// Verdict is the judgement of one patch. See docs/JUDGE.md for the schema.
type Verdict struct {
	Pass     bool      `json:"pass"`
	Verdict  string    `json:"verdict"` // pass, fail, unknown
	Reason   string    `json:"reason"`
	Applied  bool      `json:"applied"`
	Stripped []string  `json:"stripped"`
	ExitCode int       `json:"exit_code"`
	TimedOut bool      `json:"timed_out"`
	Results  *Results  `json:"results"`
	Baseline *Baseline `json:"baseline"`
	Score    Score     `json:"score"`
	Failures []string  `json:"failures,omitempty"`
	TestCmd  string    `json:"test_command"`
	RanCmd   string    `json:"ran_command"`
	Base     string    `json:"base"`
	Timings  Timings   `json:"timings_ms"`
	Output   string    `json:"-"`
}

// Baseline is the test command's outcome on the untouched base.
type Baseline struct {
	Results  *Results           `json:"results"`
	Tests    map[string]Outcome `json:"tests,omitempty"`
	ExitCode int                `json:"exit_code"`
	Cached   bool               `json:"cached"`
}

// Timings are in milliseconds.
type Timings struct {
	Fork  int64 `json:"fork"`
	Test  int64 `json:"test"` // apply, hidden tests and the test command, in one sandbox
	Total int64 `json:"total"`
}

// Judger judges patches against one base. Prepare does the work all
// patches share once — the base, the pid 1, the command as run, the
// caches, the baseline — so a race that judges forks one at a time as they
// finish pays for it once.
type Judger struct {
	o      Options
	pid1   string
	base   string
	runCmd string
	bl     *Baseline
}

// Prepare readies a Judger; its error is the judge's own.
func Prepare(ctx context.Context, o Options) (*Judger, error) {
	if strings.TrimSpace(o.Test) == "" {
		return nil, fmt.Errorf("%w: no test command", ErrCannotJudge)
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Minute
	}
	hidden := make([]string, len(o.Hidden))
	for i, h := range o.Hidden {
		abs, err := filepath.Abs(h)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: --hidden %s: no such directory", ErrCannotJudge, h)
		}
		hidden[i] = abs
	}
	o.Hidden = hidden
	top, base, err := workspace.ResolveBase(ctx, o.Repo, o.Rev)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCannotJudge, err)
	}
	j := &Judger{o: o, base: base, pid1: "judge-" + hashOf(top, base)[:16], runCmd: structured(o.Test)}
	if _, err := o.Store.Get(j.pid1); err != nil {
		if _, err := o.Store.New(ctx, j.pid1, workspace.NewOptions{Repo: top, Rev: base}); err != nil && !errors.Is(err, workspace.ErrExists) {
			return nil, fmt.Errorf("%w: %v", ErrCannotJudge, err)
		}
	}
	j.o.Strip.Named = append(append([]string{}, o.Strip.Named...), namedFiles(o.Test, filepath.Join(o.Store.Root, j.pid1, "tree"))...)
	j.o.goEnv = goCaches()
	if j.bl, err = baseline(ctx, j.o, j.pid1, base, j.runCmd); err != nil {
		return nil, err
	}
	return j, nil
}

// Judge prepares and judges in one call.
func Judge(ctx context.Context, o Options, patches [][]byte) ([]*Verdict, error) {
	j, err := Prepare(ctx, o)
	if err != nil {
		return nil, err
	}
	return j.Judge(ctx, patches)
}

// Judge judges patches in parallel. The error is for the judge itself; a
// patch's failure is its Verdict.
func (j *Judger) Judge(ctx context.Context, patches [][]byte) ([]*Verdict, error) {
	n := j.o.Parallel
	if n <= 0 {
		n = runtime.NumCPU()
	}
	out := make([]*Verdict, len(patches))
	errs := make([]error, len(patches))
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, p := range patches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i], errs[i] = judgeOne(ctx, j.o, j.pid1, j.base, j.runCmd, j.bl, p)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

func judgeOne(ctx context.Context, o Options, pid1, base, runCmd string, bl *Baseline, patch []byte) (*Verdict, error) {
	start := time.Now()
	v := &Verdict{TestCmd: o.Test, RanCmd: runCmd, Base: base, Baseline: bl}
	kept, stripped := strip(patch, o.Strip)
	v.Stripped = stripped
	if v.Stripped == nil {
		v.Stripped = []string{}
	}
	fork, cleanup, err := newFork(ctx, o.Store, pid1)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	v.Timings.Fork = time.Since(start).Milliseconds()

	t := time.Now()
	run, err := runTests(ctx, o, fork, runCmd, kept)
	if err != nil {
		return nil, err
	}
	if run.applyFailed {
		v.Verdict, v.Reason = "fail", "the patch does not apply: "+run.applyErr
		v.Timings.Total = time.Since(start).Milliseconds()
		return v, nil
	}
	v.Applied = true
	v.Timings.Test = time.Since(t).Milliseconds()
	v.ExitCode, v.TimedOut, v.Results, v.Output = run.exit, run.timedOut, run.results, run.output
	v.Verdict, v.Reason, v.Score = decide(bl.Results, v.Results, v.ExitCode, v.TimedOut)
	v.Pass = v.Verdict == "pass"
	if v.Results != nil {
		for name, o := range v.Results.Tests {
			if o == Failed {
				v.Failures = append(v.Failures, name)
			}
		}
	}
	if len(stripped) > 0 && !v.Pass {
		v.Reason += fmt.Sprintf(" (stripped edits to %d test or config file(s): %s)", len(stripped), names(append([]string{}, stripped...)))
	}
	v.Timings.Total = time.Since(start).Milliseconds()
	return v, nil
}

type testRun struct {
	exit        int
	timedOut    bool
	results     *Results
	output      string
	applyFailed bool
	applyErr    string
}

// applyFailedStatus and applyMarker tell an apply failure from the tests'
// own: the test command could print the marker and exit so only to fail
// its own patch.
const (
	applyFailedStatus = 222
	applyMarker       = "forkbomb-judge: the patch does not apply"
)

// runTests applies a patch in a fork, lays the hidden tests over it and
// runs the test command there, in one confined, offline sandbox with a
// timeout, toolchains readable and build caches behind a throwaway layer.
// One sandbox, not three: its start is most of the judge's own overhead.
func runTests(ctx context.Context, o Options, fork, runCmd string, patch []byte) (*testRun, error) {
	var steps []string
	ro := append([]string{}, o.Hidden...)
	if len(bytes.TrimSpace(patch)) > 0 {
		dir, err := sandbox.MkdirTemp("judge")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		pf := filepath.Join(dir, "patch")
		if err := os.WriteFile(pf, patch, 0o644); err != nil {
			return nil, err
		}
		os.Chmod(dir, 0o755)
		ro = append(ro, dir)
		steps = append(steps, fmt.Sprintf("git apply --binary --whitespace=nowarn %s 2>&1 || { echo %s >&2; exit %d; }", shellQuote(pf), shellQuote(applyMarker), applyFailedStatus))
	}
	for _, h := range o.Hidden {
		steps = append(steps, fmt.Sprintf("cp -a %s/. . || exit 125", shellQuote(h)))
	}
	script := runCmd
	if len(steps) > 0 {
		script = strings.Join(steps, "\n") + "\n" + runCmd
	}
	p := sandbox.Policy{
		Command:    []string{"/bin/sh", "-c", script},
		Timeout:    o.Timeout,
		Toolchains: true,
		ReadOnly:   ro,
		MaxOutput:  32 << 20,
		SetEnv: []string{"CI=true", "NO_COLOR=1", "PYTHONDONTWRITEBYTECODE=1", "GOPROXY=off", "GOTOOLCHAIN=local", "GOTELEMETRY=off",
			"NPM_CONFIG_UPDATE_NOTIFIER=false", "NPM_CONFIG_FUND=false", "NPM_CONFIG_AUDIT=false"},
	}
	addGoCaches(&p, o.goEnv)
	var out bytes.Buffer
	res, err := o.Store.Exec(ctx, fork, p, sandbox.Stdio{Stdout: &out, Stderr: &out})
	if err != nil {
		if errors.Is(err, sandbox.ErrCommandNotFound) {
			return nil, fmt.Errorf("%w: /bin/sh not found", ErrCannotJudge)
		}
		return nil, fmt.Errorf("%w: run tests: %v", ErrCannotJudge, err)
	}
	r := &testRun{exit: res.ExitCode, timedOut: res.TimedOut, output: out.String()}
	if r.exit == applyFailedStatus && strings.Contains(r.output, applyMarker) {
		r.applyFailed = true
		r.applyErr = firstLine(strings.Split(r.output, applyMarker)[0])
		return r, nil
	}
	r.results = parse(out.Bytes(), nil)
	return r, nil
}

// goCaches returns the user's Go build and module caches, if any.
func goCaches() []string {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil
	}
	out, err := exec.Command(goBin, "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		return nil
	}
	f := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(f) != 2 {
		return nil
	}
	return f
}

// addGoCaches makes the Go module cache readable and the build cache
// usable through a throwaway layer, so a judge run neither rebuilds the
// standard library nor leaves anything in the user's cache.
func addGoCaches(p *sandbox.Policy, caches []string) {
	if len(caches) != 2 {
		return
	}
	if fi, err := os.Stat(caches[0]); err == nil && fi.IsDir() {
		p.Scratch = append(p.Scratch, caches[0])
		p.SetEnv = append(p.SetEnv, "GOCACHE="+caches[0])
	}
	if fi, err := os.Stat(caches[1]); err == nil && fi.IsDir() {
		p.ReadOnly = append(p.ReadOnly, caches[1])
		p.SetEnv = append(p.SetEnv, "GOMODCACHE="+caches[1])
	}
}

// baseline runs the test command once on the base (with the hidden tests)
// and caches the outcome by base commit, command and hidden tests, so N
// patches pay for it once.
func baseline(ctx context.Context, o Options, pid1, base, runCmd string) (*Baseline, error) {
	key := hashOf(base, runCmd, hiddenHash(o.Hidden))
	path := ""
	if o.CacheDir != "" {
		path = filepath.Join(o.CacheDir, "baseline-"+key[:32]+".json")
		var b Baseline
		if data, err := os.ReadFile(path); err == nil && json.Unmarshal(data, &b) == nil {
			b.Cached = true
			return &b, nil
		}
	}
	fork, cleanup, err := newFork(ctx, o.Store, pid1)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	run, err := runTests(ctx, o, fork, runCmd, nil)
	if err != nil {
		return nil, err
	}
	if run.exit == 127 && run.results == nil {
		return nil, fmt.Errorf("%w: the test command was not found in the sandbox (exit 127): %s", ErrCannotJudge, firstLine(run.output))
	}
	b := &Baseline{Results: run.results, ExitCode: run.exit}
	if path != "" && !run.timedOut {
		if err := os.MkdirAll(o.CacheDir, 0o700); err == nil {
			if data, err := json.Marshal(b); err == nil {
				tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
				if os.WriteFile(tmp, data, 0o600) == nil {
					os.Rename(tmp, path)
				}
			}
		}
	}
	return b, nil
}

// newFork makes a throwaway fork of pid 1.
func newFork(ctx context.Context, s *workspace.Store, pid1 string) (string, func(), error) {
	var r [6]byte
	rand.Read(r[:])
	name := "judge-run-" + hex.EncodeToString(r[:])
	if _, err := s.Fork(ctx, pid1, name); err != nil {
		return "", nil, fmt.Errorf("%w: fork: %v", ErrCannotJudge, err)
	}
	return name, func() { s.Remove(name) }, nil
}

// structured asks the runner for output the judge can read by name, where
// that changes nothing about what runs: -json for go test, -rA for pytest
// (one line per test), the TAP reporter for node's runner.
func structured(cmd string) string {
	if strings.ContainsAny(cmd, "|&;<>()$`\\\"'\n") {
		return cmd
	}
	f := strings.Fields(cmd)
	if len(f) > 0 {
		f[0] = filepath.Base(f[0])
	}
	switch {
	case len(f) >= 2 && f[0] == "go" && f[1] == "test" && !contains(f, "-json"):
		return strings.Replace(cmd, "test", "test -json", 1)
	case len(f) >= 1 && f[0] == "pytest",
		len(f) >= 3 && strings.HasPrefix(f[0], "python") && f[1] == "-m" && f[2] == "pytest":
		return cmd + " -rA -p no:cacheprovider"
	case len(f) >= 2 && f[0] == "node" && contains(f, "--test") && !strings.Contains(cmd, "--test-reporter"):
		return strings.Replace(cmd, "--test", "--test --test-reporter=tap", 1)
	}
	return cmd
}

// namedFiles are the files of the tree the test command names: a patch
// may not edit the script that runs the tests.
func namedFiles(cmd, tree string) []string {
	var out []string
	for _, tok := range strings.Fields(cmd) {
		tok = strings.Trim(tok, `"'`)
		tok = strings.TrimPrefix(tok, "./")
		if tok == "" || strings.HasPrefix(tok, "-") || strings.Contains(tok, "..") || filepath.IsAbs(tok) {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(tree, tok)); err == nil && fi.Mode().IsRegular() {
			out = append(out, filepath.ToSlash(tok))
		}
	}
	return out
}

func contains(f []string, s string) bool {
	for _, x := range f {
		if x == s {
			return true
		}
	}
	return false
}

func hashOf(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s;", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// hiddenHash identifies the hidden tests by their content.
func hiddenHash(dirs []string) string {
	h := sha256.New()
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return nil
			}
			data, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(d, p)
			fmt.Fprintf(h, "%s %d %x\n", rel, len(data), sha256.Sum256(data))
			return nil
		})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
