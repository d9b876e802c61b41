package mutant

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/forkbomb/forkbomb/internal/lab"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// Status is how a mutant fared, in Stryker's words.
type Status string

const (
	Killed       Status = "Killed"
	Survived     Status = "Survived"
	Timeout      Status = "Timeout"
	CompileError Status = "CompileError"
	NoCoverage   Status = "NoCoverage"
	Ignored      Status = "Ignored" // not run: past --budget or --max
)

// Options say what to mutate and how to test it.
type Options struct {
	Store *workspace.Store
	Repo  string // only read, once, for the snapshot
	Test  string // run with sh -c in each mutant's fork
	Paths []string
	Forks int
	// Budget stops starting mutants after this long (0: none); the rest
	// are Ignored.
	Budget time.Duration
	// Timeout of each mutant's tests (0: three times the baseline plus
	// ten seconds). The baseline itself gets 30 minutes, or twice this.
	Timeout time.Duration
	// Max runs at most this many of the covered mutants, spread evenly
	// over them (0: all).
	Max int
	// Filter, when set, keeps only the mutants it accepts (the others are
	// not reported).
	Filter func(Mutant) bool
	// NoCoverage runs mutants of lines no test reaches too.
	NoCoverage bool
	Policy     sandbox.Policy
	Progress   func(done, total int, r Result)
}

// Result is one mutant's outcome.
type Result struct {
	Mutant
	Status  Status  `json:"status"`
	Reason  string  `json:"reason,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
}

// Report is a finished run.
type Report struct {
	Results  []Result          `json:"results"`
	Sources  map[string][]byte `json:"-"`
	Baseline float64           `json:"baseline_seconds"`
	Seconds  float64           `json:"seconds"`
	Coverage bool              `json:"coverage"` // whether lines were filtered by coverage
}

const (
	compileFailed = 223
	compileMarker = "forkbomb-mutants: the mutant does not compile"
	coverFile     = ".forkbomb-cover.out"
	maxSource     = 4 << 20
)

// script runs a language's syntax check of the mutated file ($2, may be
// empty) and then the tests ($1).
const script = `if [ -n "$2" ]; then sh -c "$2" >&2 || { echo '` + compileMarker + `' >&2; exit 223; }; fi
exec sh -c "$1"`

// Run generates the mutants and tests each in its own fork.
func Run(ctx context.Context, o Options) (*Report, error) {
	start := time.Now()
	if o.Forks < 1 {
		o.Forks = 1
	}
	pid1 := "mutants-" + lab.NewID()
	if _, err := o.Store.New(ctx, pid1, workspace.NewOptions{Repo: o.Repo, Temp: true}); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	defer o.Store.Remove(context.WithoutCancel(ctx), pid1)
	tree, err := o.Store.Snapshot(ctx, pid1)
	if err != nil {
		return nil, err
	}
	srcs, err := sources(tree, o.Paths, maxSource)
	if err != nil {
		return nil, fmt.Errorf("read sources: %w", err)
	}
	var all []Mutant
	for _, f := range sortedKeys(srcs) {
		ms, err := Generate(f, srcs[f])
		if err != nil {
			continue // a file that does not parse is not ours to judge
		}
		for _, m := range ms {
			if o.Filter == nil || o.Filter(m) {
				all = append(all, m)
			}
		}
	}
	if len(all) == 0 {
		return nil, ErrNoMutants
	}
	// Every fork is seen at one path inside its sandbox, so Go's build
	// cache (keyed on a package's folder) serves the baseline's builds to
	// every mutant.
	at, err := os.MkdirTemp("", "forkbomb-mutants-at-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(at)
	keep, err := os.MkdirTemp("", "forkbomb-mutants-gocache-")
	if err != nil {
		return nil, err
	}
	defer sandbox.RemoveAll(keep)
	r := &runner{o: o, pid1: pid1, at: at, goEnv: goCaches(), keep: keep}
	gomod, _ := os.ReadFile(filepath.Join(tree, "go.mod"))
	goMod := len(gomod) > 0
	base, cov, err := r.baseline(ctx, goMod && !o.NoCoverage, goModule(gomod))
	if err != nil {
		return nil, err
	}
	rep := &Report{Sources: srcs, Baseline: base.Seconds(), Coverage: cov != nil}
	if o.Timeout == 0 {
		o.Timeout = 3*base + 10*time.Second
		r.o.Timeout = o.Timeout
	}
	var todo []int
	results := make([]Result, len(all))
	for i, m := range all {
		results[i] = Result{Mutant: m}
		if cov != nil && !cov.reached(m) {
			results[i].Status = NoCoverage
			continue
		}
		todo = append(todo, i)
	}
	if o.Max > 0 && len(todo) > o.Max {
		keepIdx := map[int]bool{}
		for j := 0; j < o.Max; j++ {
			keepIdx[todo[j*len(todo)/o.Max]] = true
		}
		var sampled []int
		for _, i := range todo {
			if keepIdx[i] {
				sampled = append(sampled, i)
			} else {
				results[i].Status, results[i].Reason = Ignored, "not sampled (--max)"
			}
		}
		todo = sampled
	}
	var deadline time.Time
	if o.Budget > 0 {
		deadline = time.Now().Add(o.Budget)
	}
	var mu sync.Mutex
	done := 0
	jobs := make(chan int)
	var wg sync.WaitGroup
	var firstErr error
	for w := 0; w < o.Forks; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				res, err := r.mutant(ctx, results[i].Mutant, srcs[results[i].File], fmt.Sprintf("%s-%d", pid1, i))
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if err == nil {
					results[i] = res
				}
				done++
				if o.Progress != nil && err == nil {
					o.Progress(done, len(todo), res)
				}
				mu.Unlock()
			}
		}()
	}
	for _, i := range todo {
		if ctx.Err() != nil || (!deadline.IsZero() && time.Now().After(deadline)) {
			results[i].Status, results[i].Reason = Ignored, "past --budget"
			continue
		}
		mu.Lock()
		stop := firstErr != nil
		mu.Unlock()
		if stop {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep.Results = results
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

type runner struct {
	o     Options
	pid1  string
	at    string
	goEnv []string
	keep  string
}

// policy is the sandbox policy of one test run in fork: the caller's
// settings, the fork mounted at r.at, Go's caches.
func (r *runner) policy(testCmd, check string, baseline bool) sandbox.Policy {
	p := r.o.Policy
	p.Command = []string{"sh", "-c", script, "forkbomb-mutants", testCmd, check}
	p.Workdir = r.at
	p.Overlay = &sandbox.Overlay{Volatile: true}
	p.Timeout = r.o.Timeout
	p.SetEnv = append(append([]string{}, p.SetEnv...), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
	if len(r.goEnv) == 2 {
		if fi, err := os.Stat(r.goEnv[0]); err == nil && fi.IsDir() {
			p.Scratch = append(append([]string{}, p.Scratch...), r.goEnv[0])
			p.SetEnv = append(p.SetEnv, "GOCACHE="+r.goEnv[0])
			if baseline {
				p.ScratchLayers = map[string]sandbox.ScratchLayers{r.goEnv[0]: {Keep: r.keep}}
			} else {
				p.ScratchLayers = map[string]sandbox.ScratchLayers{r.goEnv[0]: {Lower: []string{filepath.Join(r.keep, "upper")}}}
			}
		}
		if fi, err := os.Stat(r.goEnv[1]); err == nil && fi.IsDir() {
			p.ReadOnly = append(append([]string{}, p.ReadOnly...), r.goEnv[1])
			p.SetEnv = append(p.SetEnv, "GOMODCACHE="+r.goEnv[1])
		}
	}
	return p
}

// baseline runs the tests on the untouched source (they must pass) and,
// for a Go module, once more with a cover profile.
func (r *runner) baseline(ctx context.Context, goCover bool, module string) (time.Duration, coverage, error) {
	fork := r.pid1 + "-base"
	if _, err := r.o.Store.ForkTemp(ctx, r.pid1, fork); err != nil {
		return 0, nil, err
	}
	defer r.o.Store.Remove(context.WithoutCancel(ctx), fork)
	test := r.o.Test
	if goCover {
		test = "(" + r.o.Test + ") && go test -count=1 -coverpkg=./... -coverprofile=" + coverFile + " ./... >/dev/null"
	}
	// The baseline is not a mutant: Timeout bounds a mutant's run (an
	// infinite loop is its verdict), while the baseline runs the tests
	// twice with coverage and only needs to end. It gets 30 minutes, or
	// twice a longer Timeout; a loaded machine must not fail it.
	saved := r.o.Timeout
	r.o.Timeout = max(30*time.Minute, 2*saved)
	start := time.Now()
	var out lab.Tail
	res, err := r.o.Store.Exec(ctx, fork, r.policy(test, "", true), sandbox.Stdio{Stdout: &out, Stderr: &out})
	took := time.Since(start)
	r.o.Timeout = saved
	if err != nil {
		return 0, nil, fmt.Errorf("baseline: %w", err)
	}
	if res.ExitCode != 0 || res.TimedOut {
		return 0, nil, fmt.Errorf("%w (exit %d): %s", ErrBaselineFails, res.ExitCode, out.Last(5))
	}
	if !goCover {
		return took, nil, nil
	}
	_, files, err := r.o.Store.Files(ctx, fork)
	if err != nil {
		return 0, nil, err
	}
	b, _, err := files.Read(ctx, coverFile, 256<<20)
	if err != nil {
		return took, nil, nil // no profile: run every mutant
	}
	took /= 2 // the tests ran twice: the command and the cover profile
	return took, parseCoverProfile(b, module), nil
}

// mutant writes one mutant into a fresh fork and runs the tests there.
func (r *runner) mutant(ctx context.Context, m Mutant, src []byte, fork string) (Result, error) {
	res := Result{Mutant: m}
	if _, err := r.o.Store.ForkTemp(ctx, r.pid1, fork); err != nil {
		return res, err
	}
	defer r.o.Store.Remove(context.WithoutCancel(ctx), fork)
	_, files, err := r.o.Store.Files(ctx, fork)
	if err != nil {
		return res, err
	}
	if err := files.Write(ctx, m.File, m.Apply(src), 0o644); err != nil {
		return res, fmt.Errorf("write mutant %s: %w", m.ID, err)
	}
	start := time.Now()
	var out lab.Tail
	sr, err := r.o.Store.Exec(ctx, fork, r.policy(r.o.Test, syntaxCheck(m.File), false), sandbox.Stdio{Stdout: &out, Stderr: &out})
	res.Seconds = time.Since(start).Seconds()
	if err != nil {
		return res, fmt.Errorf("mutant %s: %w", m.ID, err)
	}
	o := out.String()
	switch {
	case sr.TimedOut:
		res.Status = Timeout
	case sr.ExitCode == compileFailed && strings.Contains(o, compileMarker),
		sr.ExitCode != 0 && (strings.Contains(o, "[build failed]") || strings.Contains(o, "[setup failed]")),
		sr.ExitCode != 0 && strings.HasSuffix(m.File, ".py") && (strings.Contains(o, "SyntaxError: ") || strings.Contains(o, "IndentationError: ")):
		res.Status, res.Reason = CompileError, out.Last(1)
	case sr.ExitCode == 0:
		res.Status = Survived
	case sr.Limit != "":
		res.Status, res.Reason = Killed, "killed by the "+sr.Limit+" limit"
	default:
		res.Status = Killed
	}
	return res, nil
}

// syntaxCheck is a command that fails when the mutated file does not
// parse, where a language's runtime would only say so by failing the
// tests. Go's builds say it themselves ("[build failed]"); so does
// Python, on every runner, by naming the SyntaxError (which python3 runs
// the tests is the test command's choice, so no other one checks).
func syntaxCheck(file string) string {
	q := "'" + strings.ReplaceAll(file, "'", `'\''`) + "'"
	switch {
	case strings.HasSuffix(file, ".js"), strings.HasSuffix(file, ".mjs"), strings.HasSuffix(file, ".cjs"):
		return "! command -v node >/dev/null || node --check " + q
	}
	return ""
}

func goCaches() []string {
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		return nil
	}
	f := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(f) != 2 {
		return nil
	}
	return f
}

func sortedKeys(m map[string][]byte) []string {
	var l []string
	for k := range m {
		l = append(l, k)
	}
	sort.Strings(l)
	return l
}
