package bisect

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"testing"
)

// expected is what any complete bisect of a monotonic range must end with:
// the last testable commit before the first bad one, the first testable
// bad commit, and every (skipped) commit between them.
func expected(n, firstBad int, skip map[int]bool) []int {
	good := -1
	for i := 0; i < firstBad; i++ {
		if !skip[i] {
			good = i
		}
	}
	bad := n - 1
	for i := firstBad; i < n-1; i++ {
		if !skip[i] {
			bad = i
			break
		}
	}
	var l []int
	for i := good + 1; i <= bad; i++ {
		l = append(l, i)
	}
	return l
}

func TestSearchMatchesEveryThreshold(t *testing.T) {
	t.Parallel()
	skips := map[string]map[int]bool{
		"none":      {},
		"some":      {3: true, 4: true, 11: true, 20: true},
		"run":       {7: true, 8: true, 9: true, 10: true},
		"alternate": {1: true, 3: true, 5: true, 7: true, 9: true, 11: true, 13: true},
	}
	for name, skip := range skips {
		for _, k := range []int{1, 2, 3, 7} {
			t.Run(fmt.Sprintf("%s/k=%d", name, k), func(t *testing.T) {
				t.Parallel()
				const n = 25
				for first := 0; first < n; first++ {
					var probes atomic.Int32
					probe := func(_ context.Context, i int) (Verdict, error) {
						probes.Add(1)
						if i == n-1 {
							return "", errors.New("bad is known bad and never probed")
						}
						switch {
						case skip[i]:
							return Skip, nil
						case i >= first:
							return Bad, nil
						}
						return Good, nil
					}
					// Start's bound on the next round is what bisect
					// starts sandboxes ahead by: it must never be short.
					next, rounds := -1, 0
					hooks := Hooks{Start: func(round int, pick []int, others int) {
						rounds++
						if round != rounds {
							t.Errorf("first bad %d: Start heard round %d as the %dth", first, round, rounds)
						}
						if next >= 0 && len(pick) > next {
							t.Errorf("first bad %d: round %d probes %d commits, Start of the round before said at most %d", first, round, len(pick), next)
						}
						next = min(k, others)
					}}
					a, err := Search(context.Background(), n, k, probe, hooks)
					if err != nil {
						t.Fatal(err)
					}
					if rounds != a.Rounds {
						t.Errorf("first bad %d: Start heard %d rounds of %d", first, rounds, a.Rounds)
					}
					if want := expected(n, first, skip); !slices.Equal(a.Candidates, want) {
						t.Errorf("first bad %d: candidates %v, want %v", first, a.Candidates, want)
					}
				}
			})
		}
	}
}

// Without skips, K probes a round take about log_(K+1)(N) rounds: the
// count of rounds, not time, is what this checks.
func TestSearchRounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ n, k int }{{1000, 1}, {1000, 3}, {1000, 7}, {500, 15}} {
		t.Run(fmt.Sprintf("n=%d/k=%d", tc.n, tc.k), func(t *testing.T) {
			t.Parallel()
			bound := int(math.Ceil(math.Log(float64(tc.n))/math.Log(float64(tc.k+1)))) + 1
			for _, first := range []int{0, 1, tc.n / 3, tc.n - 2, tc.n - 1} {
				probe := func(_ context.Context, i int) (Verdict, error) {
					if i >= first {
						return Bad, nil
					}
					return Good, nil
				}
				a, err := Search(context.Background(), tc.n, tc.k, probe, Hooks{})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(a.Candidates, []int{first}) {
					t.Fatalf("first bad %d: got %v", first, a.Candidates)
				}
				if a.Rounds > bound {
					t.Errorf("first bad %d: %d rounds, more than log_%d(%d)+1 = %d", first, a.Rounds, tc.k+1, tc.n, bound)
				}
			}
		})
	}
}

func TestSearchStopsOnError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	_, err := Search(context.Background(), 50, 4, func(_ context.Context, i int) (Verdict, error) {
		if i%2 == 0 {
			return "", boom
		}
		return Good, nil
	}, Hooks{})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want %v", err, boom)
	}
}
