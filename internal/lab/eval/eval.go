package eval

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/lab/mutant"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// ErrNoFaults: no mutant was killed, so there is nothing to fix.
var ErrNoFaults = errors.New("no killed mutant to make a fault of")

// Entry is one contender: a name for the table and the agent.
type Entry struct {
	Name  string
	Agent engine.Agent
}

// DefaultTimeout is eval's --timeout: the limit of each attempt's agent
// (and, on stored tasks, of the verifier on its solution).
const DefaultTimeout = 15 * time.Minute

// Options say what to evaluate.
type Options struct {
	Store    *workspace.Store
	RunsDir  string
	CacheDir string
	Repo     string
	Test     string
	Faults   int
	Engines  []Entry
	// Mutants are the options of the mutant run that finds the faults
	// (its Store, Repo and Test are set from these).
	Mutants mutant.Options
	Timeout time.Duration // per attempt
	// Progress gets a line per mutant and per attempt.
	Progress io.Writer
}

// Fault is a killed mutant made a task.
type Fault struct {
	ID   string `json:"id"`
	File string `json:"file"`
	Line int    `json:"line"`
	Diff string `json:"diff"`
}

// Attempt is one engine on one fault, or on one stored task.
type Attempt struct {
	Engine  string        `json:"engine"`
	Fault   string        `json:"fault,omitempty"`
	Task    string        `json:"task,omitempty"`
	Fixed   bool          `json:"fixed"`
	Verdict event.Verdict `json:"verdict,omitempty"`
	// Warnings: the judge's about its verdict (record.Fork.Warnings) —
	// sentinels the faulty base gets wrong too and that were not checked,
	// hidden tests that add none — when it gave any.
	Warnings []string `json:"warnings,omitempty"`
	Run      string   `json:"run"` // the run's id
	// Seconds is the race's wall time, the verifier's excluded.
	Seconds float64 `json:"seconds"`
	Turns   int     `json:"turns"`
	Tokens  int64   `json:"tokens"`
	CostUSD float64 `json:"cost_usd"`
	// At is when an attempt on a stored task ended (the board's order).
	At time.Time `json:"at,omitzero"`
	// Strength is the verifier's word on a passing solution to a stored
	// task (the run's record.Fork.Strength): how many mutants of the lines
	// it added the task's tests caught, and the survivors. Absent for a
	// failed attempt, one the verifier could not finish, and attempts
	// recorded before boards held it.
	Strength *event.VerifiedData `json:"strength,omitempty"`
}

// Row is one engine's line of the leaderboard.
type Row struct {
	Engine        string  `json:"engine"`
	Fixed         int     `json:"fixed"`
	Faults        int     `json:"faults"`
	MedianSeconds float64 `json:"median_seconds"`
	MedianTurns   float64 `json:"median_turns"`
	Tokens        int64   `json:"tokens"`
	CostUSD       float64 `json:"cost_usd"`
}

// Result is a finished evaluation.
type Result struct {
	Faults   []Fault   `json:"faults"`
	Attempts []Attempt `json:"attempts"`
	Table    []Row     `json:"table"` // best first: most fixed, then fastest
}

// Run finds the faults and races every engine on each.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Faults < 1 {
		o.Faults = 1
	}
	mo := o.Mutants
	mo.Store, mo.Repo, mo.Test = o.Store, o.Repo, o.Test
	rep, err := mutant.Run(ctx, mo)
	if err != nil {
		return nil, fmt.Errorf("find faults: %w", err)
	}
	var killed []mutant.Result
	for _, r := range rep.Results {
		if r.Status == mutant.Killed {
			killed = append(killed, r)
		}
	}
	if len(killed) == 0 {
		return nil, ErrNoFaults
	}
	// spread over the killed, so N faults are not N neighbours
	var picked []mutant.Result
	for j := 0; j < min(o.Faults, len(killed)); j++ {
		picked = append(picked, killed[j*len(killed)/min(o.Faults, len(killed))])
	}
	res := &Result{}
	tmp, err := os.MkdirTemp("", "forkbomb-eval-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	for i, m := range picked {
		src := rep.Sources[m.File]
		f := Fault{ID: fmt.Sprintf("fault-%d", i+1), File: m.File, Line: m.Line, Diff: m.Diff(src)}
		res.Faults = append(res.Faults, f)
		repo := filepath.Join(tmp, f.ID)
		if err := faultRepo(ctx, o.Repo, repo, m.File, m.Apply(src), m.ID); err != nil {
			return nil, fmt.Errorf("%s: %w", f.ID, err)
		}
		for _, e := range o.Engines {
			a, err := attempt(ctx, o, e, f, repo)
			if err != nil {
				return nil, fmt.Errorf("%s on %s: %w", e.Name, f.ID, err)
			}
			res.Attempts = append(res.Attempts, a)
			if o.Progress != nil {
				fmt.Fprintf(o.Progress, "%s %s: fixed=%v (%s) in %.1fs, %d turns\n", f.ID, e.Name, a.Fixed, a.Verdict, a.Seconds, a.Turns)
				printWarnings(o.Progress, a.Warnings)
			}
		}
	}
	res.Table = table(o.Engines, res.Attempts, len(res.Faults))
	return res, nil
}

// printWarnings prints an attempt's judge warnings under its progress
// line, escaped: they name tests, which the code under test chose.
func printWarnings(w io.Writer, warnings []string) {
	for _, s := range warnings {
		fmt.Fprintf(w, "  judge's warning: %s\n", event.Printable(s))
	}
}

// prompt is what every engine is told: the symptom, never the mutant.
func prompt(test string) string {
	return "A recent change broke this repository: `" + test + "` fails. Find the bug in the code (not in the tests) and fix it."
}

func attempt(ctx context.Context, o Options, e Entry, f Fault, repo string) (Attempt, error) {
	r, dir, err := run.Race(ctx, run.Options{
		Store: o.Store, RunsDir: o.RunsDir, CacheDir: o.CacheDir, Repo: repo,
		Task: prompt(o.Test), Forks: 1, Engine: e.Agent, Test: o.Test, Timeout: o.Timeout,
	})
	if err != nil {
		return Attempt{}, err
	}
	a := Attempt{Engine: e.Name, Fault: f.ID, Run: r.ID, Fixed: r.Winner != nil, Seconds: r.Seconds,
		Tokens: r.TokensIn + r.TokensOut, CostUSD: float64(r.CostMicroUSD) / 1e6, Turns: turns(dir)}
	if len(r.Fork) > 0 {
		a.Verdict, a.Warnings = r.Fork[0].Verdict, r.Fork[0].Warnings
	}
	return a, nil
}

// turns counts the model's answers in a run's record.
func turns(dir string) int {
	f, err := os.Open(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(io.LimitReader(f, 256<<20))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var ev struct {
			Type event.Kind `json:"type"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == event.ModelResponse {
			n++
		}
	}
	return n
}

func table(engines []Entry, as []Attempt, faults int) []Row {
	var rows []Row
	for _, e := range engines {
		row := Row{Engine: e.Name, Faults: faults}
		var secs, turns []float64
		for _, a := range as {
			if a.Engine != e.Name {
				continue
			}
			if a.Fixed {
				row.Fixed++
			}
			secs = append(secs, a.Seconds)
			turns = append(turns, float64(a.Turns))
			row.Tokens += a.Tokens
			row.CostUSD += a.CostUSD
		}
		row.MedianSeconds, row.MedianTurns = median(secs), median(turns)
		rows = append(rows, row)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Fixed != rows[j].Fixed {
			return rows[i].Fixed > rows[j].Fixed
		}
		return rows[i].MedianSeconds < rows[j].MedianSeconds
	})
	return rows
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// WriteTable prints the leaderboard.
func (r *Result) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "%-4s %-28s %7s %10s %7s %9s %9s\n", "rank", "engine", "fixed", "median s", "turns", "tokens", "cost $")
	for i, row := range r.Table {
		fmt.Fprintf(w, "%-4d %-28s %3d/%-3d %10.1f %7.1f %9d %9.4f\n", i+1, row.Engine, row.Fixed, row.Faults, row.MedianSeconds, row.MedianTurns, row.Tokens, row.CostUSD)
	}
}

// faultRepo clones repo's HEAD (reading it only) into dst and commits the
// mutated file there: the base every engine starts from.
func faultRepo(ctx context.Context, repo, dst, file string, content []byte, id string) error {
	git := func(dir string, args ...string) error {
		full := append([]string{"-c", "core.hooksPath=/dev/null", "-c", "user.name=forkbomb", "-c", "user.email=forkbomb@localhost", "-c", "commit.gpgSign=false"}, args...)
		c := exec.CommandContext(ctx, "git", full...)
		c.Dir = dir
		c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0")
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %w: %.200s", args[0], err, out)
		}
		return nil
	}
	top, _, err := workspace.ResolveBase(ctx, repo, "HEAD")
	if err != nil {
		return err
	}
	if err := git(filepath.Dir(dst), "clone", "-q", "--no-tags", "--single-branch", "--", top, dst); err != nil {
		return err
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.WriteFile(filepath.FromSlash(file), content, 0o644); err != nil {
		return fmt.Errorf("inject the fault: %w", err)
	}
	if err := git(dst, "commit", "-qam", "forkbomb eval: "+id); err != nil {
		return err
	}
	return nil
}
