package judge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

type testRun struct {
	exit        int
	timedOut    bool
	results     *Results
	output      string
	applyFailed bool
	applyErr    string
	runner      string // "tree PATH" when the runner is a file of the repository
	limit       string // the resource limit that stopped the run, for a person
	elapsed     time.Duration
	cpu         time.Duration // the sandbox's Result.CPU
	// sentinels is the sentinel-only run's part of the output, when the
	// plan has one (sentinelPlan.second); output and results are then the
	// command's own run's alone.
	sentinels      *sentinelRun
	sentinelOutput string
}

// applyFailedStatus and applyMarker tell an apply failure from the tests'
// own: the test command could print the marker and exit so only to fail
// its own patch.
const (
	applyFailedStatus = 222
	applyMarker       = "forkbomb-judge: the patch does not apply"
	runnerMarker      = "forkbomb-judge-runner: "
	// killGrace is how long past --timeout the judge waits for a sandbox
	// that was told to stop (or never started) before giving up on it.
	killGrace = 15 * time.Second
	// tailBytes of the output are kept in a verdict that did not pass.
	tailBytes = 4 << 10
)

// runnerEnv is set for every test run: no plugin pytest finds by itself
// (a repository's *.dist-info entry points included), no user site; and
// pytest runs the tests that collect when a file does not — the usual
// base of a task that adds a function, whose new test file cannot import
// it there: otherwise that baseline names no test and no sentinel is
// planted anywhere (the run's exit status is not 0 either way).
var runnerEnv = []string{"CI=true", "NO_COLOR=1", "PYTHONDONTWRITEBYTECODE=1", "PYTHONNOUSERSITE=1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1",
	"PYTEST_ADDOPTS=--continue-on-collection-errors",
	"GOPROXY=off", "GOTOOLCHAIN=local", "GOTELEMETRY=off",
	"NPM_CONFIG_UPDATE_NOTIFIER=false", "NPM_CONFIG_FUND=false", "NPM_CONFIG_AUDIT=false"}

// runTests applies a patch in a fork, lays the hidden tests over it,
// plants the sentinels and runs the test command there, in one confined,
// offline sandbox with a deadline, toolchains readable and build caches
// behind a throwaway layer. One sandbox, not three: its start is most of
// the judge's own overhead.
//
// The set-up (apply, hidden tests, sentinels) is a script read by a shell
// of its own from standard input, which has exited before the test
// command starts: the sentinels' sources never appear in an argument list
// the code under test could read. A plan whose sentinels the command's
// selection would leave out adds a sentinel-only run after the command
// (run_split.go); only the Go -exec wrapper that removes the sentinels'
// sources is then that run's alone, so that run still compiles them.
func runTests(ctx context.Context, o Options, fork, runCmd string, patch []byte, plan *sentinelPlan) (*testRun, error) {
	start := time.Now()
	var setup []string
	ro := append([]string{}, o.Hidden...)
	dir, err := judgeTemp(o.CacheDir, "judge")
	if err != nil {
		return nil, fmt.Errorf("judge temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	ro = append(ro, dir)
	if len(bytes.TrimSpace(patch)) > 0 {
		pf := filepath.Join(dir, "patch")
		if err := os.WriteFile(pf, patch, 0o644); err != nil {
			return nil, fmt.Errorf("write patch: %w", err)
		}
		setup = append(setup, fmt.Sprintf("git apply --binary --whitespace=nowarn %s 2>&1 || { echo %s >&2; exit %d; }", shellQuote(pf), shellQuote(applyMarker), applyFailedStatus))
	}
	for _, h := range o.Hidden {
		setup = append(setup, fmt.Sprintf("cp -a %s/. . || exit 125", shellQuote(h)))
	}
	env := append([]string{}, runnerEnv...)
	if pre, err := nodePreloadEnv(dir); err != nil {
		return nil, fmt.Errorf("write node preload: %w", err)
	} else if pre != "" {
		env = append(env, pre) // preload_node.go
	}
	// Every judged run runs its tests: a result replayed from a build
	// cache is not one this run produced.
	goflags := "-count=1"
	if s := plan.plantScript(); s != "" {
		setup = append(setup, s)
	}
	sentinelFlags := goflags
	if plan != nil && plan.wrapper != "" {
		w := filepath.Join(dir, "go-exec")
		if err := os.WriteFile(w, []byte(plan.wrapper), 0o755); err != nil {
			return nil, fmt.Errorf("write go exec wrapper: %w", err)
		}
		sentinelFlags += " -exec=" + w
		if plan.second == "" {
			goflags = sentinelFlags
		}
	}
	env = append(env, "GOFLAGS="+goflags, "PATH="+o.path)
	script := runCmd
	if check := runnerCheck(runCmd); check != "" {
		script = check + "\n" + script
	}
	var marks runMarks
	if plan != nil && plan.second != "" {
		marks = newRunMarks()
		// one stream, in the order written (run_split.go)
		script = "exec 2>&1\n" + script + "\n" + marks.script("GOFLAGS="+shellQuote(sentinelFlags)+" "+plan.second)
	}
	var stdin *strings.Reader
	if len(setup) > 0 {
		script = "/bin/sh -s || exit $?\nexec </dev/null\n" + script
		stdin = strings.NewReader(strings.Join(setup, "\n") + "\nexit 0\n")
	}
	p := sandbox.Policy{
		// The fork at the one path every judged copy of the base is
		// seen at, the repository's own where it can be (judgedAt:
		// build caches key on it, and code under test sees what the
		// user's own run shows it), over a layer thrown away without a
		// flush.
		Workdir:    o.at,
		Overlay:    &sandbox.Overlay{Volatile: true},
		Command:    []string{"/bin/sh", "-c", script},
		Timeout:    o.Timeout,
		Toolchains: true,
		ReadOnly:   ro,
		MaxOutput:  32 << 20,
		SetEnv:     env,
		Hide:       o.hidePaths(),
	}
	addGoCaches(&p, o)
	o.Limits.Apply(&p)
	if o.yield != nil {
		p.Nice, p.Yield = warmNice, o.yield
	}
	// The deadline covers the sandbox's start and teardown too: the test
	// run never outlives --timeout by more than the grace a kill takes.
	rctx, cancel := context.WithTimeout(ctx, o.Timeout+killGrace)
	defer cancel()
	var out bytes.Buffer
	stdio := sandbox.Stdio{Stdout: &out, Stderr: &out}
	if stdin != nil {
		stdio.Stdin = stdin
	}
	res, err := o.Store.Exec(rctx, fork, p, stdio)
	elapsed := time.Since(start)
	if err != nil && ctx.Err() == nil && rctx.Err() != nil {
		return &testRun{exit: sandbox.ExitTimeout, timedOut: true, output: out.String(), elapsed: elapsed}, nil
	}
	if err != nil {
		if errors.Is(err, sandbox.ErrCommandNotFound) {
			return nil, fmt.Errorf("%w: /bin/sh not found", ErrCannotJudge)
		}
		return nil, fmt.Errorf("%w: run tests: %w", ErrCannotJudge, o.ownWords(err))
	}
	r := &testRun{exit: res.ExitCode, timedOut: res.TimedOut, limit: sandbox.LimitReason(res, p), output: out.String(), elapsed: elapsed, cpu: res.CPU}
	if r.exit == applyFailedStatus && strings.Contains(r.output, applyMarker) {
		r.applyFailed = true
		r.applyErr = firstLine(strings.Split(r.output, applyMarker)[0])
		return r, nil
	}
	own := out.Bytes()
	if marks.begin != "" {
		var sentinelOut []byte
		own, sentinelOut, r.sentinels = marks.split(own)
		r.output, r.sentinelOutput = string(own), string(sentinelOut)
	}
	r.runner = runnerFound(r.output)
	r.results = parse(own)
	return r, nil
}

// runnerCheck is a shell line, run before the test command in its folder
// and environment, that says where the runner the command names comes
// from — without running any of the repository's code: `python -m pytest`
// puts the folder first on the module path, so a pytest.py, pytest/,
// _pytest/ or pluggy/ of the repository would be the runner.
func runnerCheck(cmd string) string {
	f := strings.Fields(cmd)
	switch {
	case len(f) >= 3 && strings.HasPrefix(filepath.Base(f[0]), "python") && f[1] == "-m" && (f[2] == "pytest" || f[2] == "py.test"):
		py := `import os,sys,importlib.machinery as m
c=os.path.realpath(os.getcwd())
path=[c]+[x for x in os.environ.get("PYTHONPATH","").split(os.pathsep) if x]+sys.path
for name in ("pytest","_pytest","pluggy"):
    s=m.PathFinder.find_spec(name,path)
    o=(s.origin or list(s.submodule_search_locations or [""])[0]) if s else ""
    o=os.path.realpath(o) if o else ""
    if o.startswith(c+os.sep):
        print("` + runnerMarker + `tree "+name+" resolves to "+os.path.relpath(o,c))
        break
else:
    print("` + runnerMarker + `installed")`
		return shellQuote(f[0]) + " -I -c " + shellQuote(py) + " 2>/dev/null || echo " + shellQuote(runnerMarker+"unknown")
	case len(f) >= 1 && (f[0] == "pytest" || f[0] == "py.test"):
		return `p=$(command -v ` + f[0] + `); case "$p" in "$PWD"/*|[!/]*) echo "` + runnerMarker + `tree pytest resolves to $p";; *) echo "` + runnerMarker + `installed";; esac`
	}
	return ""
}

// runnerFound reads the runner check's answer: the first marker line, which
// the check printed before any code of the repository ran.
func runnerFound(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, runnerMarker); ok {
			if strings.HasPrefix(rest, "tree ") {
				return strings.TrimPrefix(rest, "tree ")
			}
			return ""
		}
	}
	return ""
}

// tail is the end of a run's output, cut at a line where it can be.
func tail(s string) string {
	if len(s) <= tailBytes {
		return s
	}
	s = s[len(s)-tailBytes:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < 200 {
		s = s[i+1:]
	}
	return "…" + s
}
