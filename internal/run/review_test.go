package run_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// TestRaceReview: a fork whose patch passes the tests but holds code that
// detects a test run (verdict "review") is never crowned. With a clean pass
// after it, the clean pass wins; with none, the run ends needs-review, no
// winner, and the record names the forks and their findings.
func TestRaceReview(t *testing.T) {
	t.Parallel()
	const gated = "add() { [ -n \"$UNDER_TEST\" ] && echo $(($1 + $2)); }\n"
	const clean = "add() { echo $(($1 + $2)); }\n"
	for _, tc := range []struct {
		name    string
		patches []string // per fork; "" changes nothing
		status  event.RunStatus
		winner  int // -1: none
		review  []int
	}{
		{"a clean pass after a flagged one wins", []string{gated, clean}, event.RunWon, 1, []int{0}},
		{"only flagged passes: needs review", []string{gated, "", gated}, event.RunNeedsReview, -1, []int{0, 2}},
		{"nothing passes: no winner", []string{"", ""}, event.RunNoWinner, -1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := newMemStore(map[string]string{"lib.sh": "add() { echo $(($1 - $2)); }\n"})
			j := &memJudge{want: "$1 + $2", review: "UNDER_TEST"}
			// Fork k writes its patch once k forks were judged, so the
			// flagged pass comes first.
			reached := make([]chan struct{}, len(tc.patches)+1)
			for i := range reached {
				reached[i] = make(chan struct{})
			}
			close(reached[0])
			j.onJudge = func(n int) { close(reached[n]) }
			agent := memAgent{act: func(ctx context.Context, files workspace.Files, task engine.Task) engine.Outcome {
				select {
				case <-reached[task.Fork]:
				case <-ctx.Done():
					return engine.Outcome{State: event.ForkKilled}
				}
				if p := tc.patches[task.Fork]; p != "" {
					if err := files.Write(ctx, "lib.sh", []byte(p), 0o644); err != nil {
						return engine.Outcome{State: event.ForkCrashed, Err: err}
					}
				}
				return engine.Outcome{State: event.ForkExited}
			}}
			o := memRace(t, store, agent, j)
			o.Forks = len(tc.patches)
			r, dir, err := run.Race(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != tc.status {
				t.Fatalf("status %s, want %s: %+v", r.Status, tc.status, r.Fork)
			}
			if (tc.winner < 0) != (r.Winner == nil) || (r.Winner != nil && *r.Winner != tc.winner) {
				t.Fatalf("winner %v, want %d", r.Winner, tc.winner)
			}
			var review []int
			for _, f := range r.Fork {
				if f.Verdict == event.Review {
					review = append(review, f.N)
					if len(f.Findings) != 1 || f.Findings[0] != "lib.sh:1: a test-mode check (sh-test-mode)" {
						t.Errorf("fork %d's findings in run.json: %q", f.N, f.Findings)
					}
					if !slices.Equal(f.Warnings, []string{"sentinel S is excused"}) {
						t.Errorf("fork %d's judge warnings in run.json: %q", f.N, f.Warnings)
					}
				}
			}
			if !slices.Equal(review, tc.review) {
				t.Errorf("forks needing review %v, want %v", review, tc.review)
			}
			events := readEvents(t, filepath.Join(dir, "events.jsonl"))
			for _, ev := range events {
				if tc.winner < 0 && strings.HasSuffix(ev, " winner") {
					t.Errorf("a winner event in a run without a winner: %v", events)
				}
			}
			for _, n := range tc.review {
				if !slices.Contains(events, fmt.Sprintf("%d verdict", n)) {
					t.Errorf("no verdict event for fork %d: %v", n, events)
				}
			}
		})
	}
}
