package eval

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/forkbomb/forkbomb/internal/lab"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// Task is a stored task to race engines on, by its id.
type Task struct {
	ID   string
	Task *lab.Task
}

// TasksOptions say which engines race on which stored tasks (mined ones:
// forkbomb task mine), and where the results accumulate.
type TasksOptions struct {
	Store    *workspace.Store
	RunsDir  string
	CacheDir string
	Tasks    []Task
	Engines  []Entry
	// Timeout bounds each attempt's agent, and the verifier on its
	// solution (0: DefaultTimeout).
	Timeout time.Duration
	// Board holds every attempt of every evaluation; each attempt is added
	// as it ends, so an interrupted evaluation keeps what it finished.
	Board    *Board
	Progress io.Writer
}

// SelectTasks resolves --tasks: a comma-separated list of stored task ids
// and "mined:" selectors — "mined:" alone every mined task, "mined:REPO"
// those mined from a repository of that folder name, "mined:ID" one.
func SelectTasks(s *lab.Store, spec string) ([]Task, error) {
	ids, err := s.List(lab.KindTask)
	if err != nil {
		return nil, err
	}
	var picked []string
	seen := map[string]bool{}
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			picked = append(picked, id)
		}
	}
	for _, sel := range strings.Split(spec, ",") {
		sel = strings.TrimSpace(sel)
		rest, mined := strings.CutPrefix(sel, "mined:")
		if !mined {
			add(sel)
			continue
		}
		n := 0
		for _, id := range ids {
			if id == rest || strings.HasPrefix(id, lab.MinedPrefix+rest) && (rest == "" || strings.HasPrefix(id, lab.MinedPrefix+rest+"-")) {
				add(id)
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("--tasks %s: no stored task matches (forkbomb task mine makes them): %w", sel, lab.ErrNotFound)
		}
	}
	var out []Task
	for _, id := range picked {
		t, err := s.LoadTask(id)
		if err != nil {
			return nil, err
		}
		out = append(out, Task{ID: id, Task: t})
	}
	return out, nil
}

// RunTasks races every engine, alone in one fork, on every task, judged
// with the task's test command and hidden tests, and adds each attempt to
// the board as it ends. It returns this evaluation's attempts.
//
// The verifier measures every solution with run's default budget
// (run.DefaultVerify mutants of the lines it added) and no gate: a pass
// is a pass on the board, and Standings says how many a verifier
// demanding more would have rejected. Its time cap is the attempt's
// timeout, not run's default of one judged run: a board compares engines
// across evaluations, and a share cut short by how busy the machine was
// would compare machines.
func RunTasks(ctx context.Context, o TasksOptions) ([]Attempt, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	var out []Attempt
	for _, t := range o.Tasks {
		for _, e := range o.Engines {
			r, _, err := run.Race(ctx, run.Options{
				Store: o.Store, RunsDir: o.RunsDir, CacheDir: o.CacheDir, Repo: t.Task.Repo, Rev: t.Task.Rev,
				Task: t.Task.Prompt, Forks: 1, Engine: e.Agent, Test: t.Task.Test, Hidden: t.Task.Hidden, Timeout: o.Timeout,
				Verify: run.DefaultVerify, VerifyTime: o.Timeout,
			})
			if err != nil {
				return out, fmt.Errorf("%s on %s: %w", e.Name, t.ID, err)
			}
			a := Attempt{Engine: e.Name, Task: t.ID, Run: r.ID, Fixed: r.Winner != nil, Seconds: r.Seconds,
				Tokens: r.TokensIn + r.TokensOut, CostUSD: float64(r.CostMicroUSD) / 1e6, At: time.Now().UTC()}
			if len(r.Fork) > 0 {
				a.Verdict, a.Strength, a.Warnings = r.Fork[0].Verdict, r.Fork[0].Strength, r.Fork[0].Warnings
			}
			if a.Strength != nil {
				// the verifier works after the verdict, on the trusted
				// side: its time is not the engine's
				a.Seconds = max(a.Seconds-a.Strength.Seconds, 0)
			}
			if err := o.Board.Add(a); err != nil {
				return out, err
			}
			out = append(out, a)
			if o.Progress != nil {
				verifier := ""
				if a.Strength != nil {
					verifier = ", verifier: " + a.Strength.Summary("")
				}
				fmt.Fprintf(o.Progress, "%s %s: solved=%v (%s) in %.1fs, %d tokens, $%.4f%s\n", t.ID, e.Name, a.Fixed, a.Verdict, a.Seconds, a.Tokens, a.CostUSD, verifier)
				printWarnings(o.Progress, a.Warnings)
			}
		}
	}
	return out, nil
}

// DefaultMinStrength is eval's --min-strength: the share of a solution's
// mutants a verifier demands before a pass counts as well tested.
const DefaultMinStrength = 0.8

// Standing is one engine's line of the accumulated leaderboard.
type Standing struct {
	Engine string `json:"engine"`
	// Attempts and Solved count races: an engine raced twice on a task
	// counts twice.
	Attempts      int     `json:"attempts"`
	Solved        int     `json:"solved"`
	Tasks         int     `json:"tasks"`        // distinct tasks attempted
	TasksSolved   int     `json:"tasks_solved"` // distinct tasks solved at least once
	Tokens        int64   `json:"tokens"`
	CostUSD       float64 `json:"cost_usd"`
	MedianSeconds float64 `json:"median_seconds"`
	// Verified counts the passes the verifier measured (Attempt.Strength);
	// the others are older than the board's strengths or were cut short.
	Verified int `json:"verified"`
	// MedianStrength is the median share of mutants caught over the
	// verified passes that had any mutant judged; absent when none had.
	MedianStrength *float64 `json:"median_strength,omitempty"`
	// WeakPasses are the verified passes a verifier demanding the table's
	// minimum strength would have rejected (event.VerifiedData.Below: a
	// share below it, or no mutant judged).
	WeakPasses int `json:"weak_passes"`
}

// Standings ranks the engines over attempts: the highest share solved
// first, then the lower cost, then the faster. A pass counts as solved
// whatever its strength; minStrength (0 to 1) only sorts the verified
// passes into weak and not.
func Standings(as []Attempt, minStrength float64) []Standing {
	by := map[string]*Standing{}
	tasks := map[string]map[string]bool{}
	secs := map[string][]float64{}
	strengths := map[string][]float64{}
	for _, a := range as {
		s := by[a.Engine]
		if s == nil {
			s = &Standing{Engine: a.Engine}
			by[a.Engine], tasks[a.Engine] = s, map[string]bool{}
		}
		s.Attempts++
		if a.Fixed {
			s.Solved++
			if v := a.Strength; v != nil {
				s.Verified++
				if v.Judged > 0 {
					strengths[a.Engine] = append(strengths[a.Engine], v.Strength())
				}
				if v.Below(minStrength) {
					s.WeakPasses++
				}
			}
		}
		tasks[a.Engine][a.Task] = tasks[a.Engine][a.Task] || a.Fixed
		s.Tokens += a.Tokens
		s.CostUSD += a.CostUSD
		secs[a.Engine] = append(secs[a.Engine], a.Seconds)
	}
	var out []Standing
	for name, s := range by {
		s.Tasks = len(tasks[name])
		for _, solved := range tasks[name] {
			if solved {
				s.TasksSolved++
			}
		}
		s.MedianSeconds = median(secs[name])
		if st := strengths[name]; len(st) > 0 {
			m := median(st)
			s.MedianStrength = &m
		}
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		ri, rj := rate(out[i]), rate(out[j])
		switch {
		case ri != rj:
			return ri > rj
		case out[i].CostUSD != out[j].CostUSD:
			return out[i].CostUSD < out[j].CostUSD
		case out[i].MedianSeconds != out[j].MedianSeconds:
			return out[i].MedianSeconds < out[j].MedianSeconds
		}
		return out[i].Engine < out[j].Engine
	})
	return out
}

func rate(s Standing) float64 { return float64(s.Solved) / float64(max(s.Attempts, 1)) }

// WriteStandings prints the leaderboard: "strength" is the median share of
// mutants caught in an engine's passes ("-": none measured), "weak<R" how
// many of its measured passes a verifier demanding minStrength (R) would
// have rejected, of how many were measured.
func WriteStandings(w io.Writer, rows []Standing, minStrength float64) {
	weak := fmt.Sprintf("weak<%g", minStrength)
	fmt.Fprintf(w, "%-4s %-28s %9s %9s %8s %9s %9s %10s %9s\n", "rank", "engine", "solved", "tasks", "strength", weak, "tokens", "cost $", "median s")
	for i, r := range rows {
		strength := "-"
		if r.MedianStrength != nil {
			strength = fmt.Sprintf("%.2f", *r.MedianStrength)
		}
		fmt.Fprintf(w, "%-4d %-28s %4d/%-4d %4d/%-4d %8s %4d/%-4d %9d %10.4f %9.1f\n", i+1, r.Engine, r.Solved, r.Attempts, r.TasksSolved, r.Tasks, strength, r.WeakPasses, r.Verified, r.Tokens, r.CostUSD, r.MedianSeconds)
	}
}
