package bisect

import (
	"context"
	"fmt"
	"sync"
)

// Verdict is what a test said of one commit.
type Verdict string

const (
	Good Verdict = "good"
	Bad  Verdict = "bad"
	Skip Verdict = "skip" // exit 125: untestable
)

// Probe tests the commit at index i of the range (0 is the oldest after
// good; the last is bad, known bad and never probed).
type Probe func(ctx context.Context, i int) (Verdict, error)

// Answer is where a search ended.
type Answer struct {
	// Good is the index of the last commit known good (-1: the good rev).
	Good int
	// Bad is the index of the first commit known bad.
	Bad int
	// Candidates are the indices the first bad commit may be: Bad alone,
	// or, when every commit between Good and Bad was skipped, those too
	// (as `git bisect` lists them), in order.
	Candidates []int
	// Rounds is how many rounds of parallel tests it took.
	Rounds int
	// Verdicts holds every commit tested, by index.
	Verdicts map[int]Verdict
}

// Hooks let a caller follow a search; either may be nil.
type Hooks struct {
	// Start hears a round's commits before their probes start, and how
	// many other commits are still untested: the most the next round can
	// probe is the lesser of that and k.
	Start func(round int, pick []int, others int)
	// Round hears one round's verdicts once all are in, and how many
	// commits are still unknown, for progress.
	Round func(round int, tested map[int]Verdict, remaining int)
}

// Search bisects a range of n commits with k probes at once. It assumes,
// as git does, that every commit after the first bad one is bad.
func Search(ctx context.Context, n, k int, probe Probe, hooks Hooks) (*Answer, error) {
	if n <= 0 {
		return nil, ErrEmptyRange
	}
	if k < 1 {
		k = 1
	}
	a := &Answer{Good: -1, Bad: n - 1, Verdicts: map[int]Verdict{}}
	for {
		pick := spread(untested(a), k)
		if len(pick) == 0 {
			break
		}
		a.Rounds++
		if hooks.Start != nil {
			hooks.Start(a.Rounds, pick, len(untested(a))-len(pick))
		}
		got, err := probeAll(ctx, pick, probe)
		if err != nil {
			return nil, err
		}
		for i, v := range got {
			a.Verdicts[i] = v
		}
		a.narrow()
		if hooks.Round != nil {
			hooks.Round(a.Rounds, got, len(untested(a)))
		}
	}
	for i := a.Good + 1; i <= a.Bad; i++ {
		a.Candidates = append(a.Candidates, i)
	}
	return a, nil
}

// narrow moves Bad to the first bad commit tested and Good to the last
// good one below it.
func (a *Answer) narrow() {
	for i, v := range a.Verdicts {
		if v == Bad && i < a.Bad {
			a.Bad = i
		}
	}
	a.Good = -1
	for i, v := range a.Verdicts {
		if v == Good && i < a.Bad && i > a.Good {
			a.Good = i
		}
	}
}

// untested lists the commits strictly between Good and Bad not tested
// yet.
func untested(a *Answer) []int {
	var l []int
	for i := a.Good + 1; i < a.Bad; i++ {
		if _, ok := a.Verdicts[i]; !ok {
			l = append(l, i)
		}
	}
	return l
}

// spread picks k of l evenly, so the k answers cut the range into k+1
// parts of about the same size.
func spread(l []int, k int) []int {
	if len(l) <= k {
		return l
	}
	seen := map[int]bool{}
	var out []int
	for j := 1; j <= k; j++ {
		i := l[j*len(l)/(k+1)]
		if !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	return out
}

// probeAll runs the probes of one round at once; the first error cancels
// the others.
func probeAll(ctx context.Context, pick []int, probe Probe) (map[int]Verdict, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	got := map[int]Verdict{}
	var errs []error
	for _, i := range pick {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := probe(ctx, i)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("commit %d: %w", i, err))
				cancel()
				return
			}
			got[i] = v
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		// The first error is the cause; later ones are mostly the
		// cancellation it set off.
		return nil, errs[0]
	}
	return got, nil
}
