package run_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/record"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

const (
	verifyBase  = "package lib\n\nfunc Add(a, b int) int { return a - b }\n\nfunc Max(a, b int) int {\n\treturn b\n}\n"
	verifyFixed = "package lib\n\nfunc Add(a, b int) int { return a + b }\n\nfunc Max(a, b int) int {\n\tif a > b {\n\t\treturn a\n\t}\n\treturn b\n}\n"
)

// pinJudge passes a patch that holds every pin: a suite that pins only
// part of the fix lets the mutants of the rest pass.
type pinJudge struct {
	pins []string
	took time.Duration // how long each judged run says it took

	mu     sync.Mutex
	judged []string // the patches judged, in order
}

func (j *pinJudge) Judge(ctx context.Context, patches [][]byte) ([]*judge.Verdict, error) {
	var out []*judge.Verdict
	for _, p := range patches {
		j.mu.Lock()
		j.judged = append(j.judged, string(p))
		j.mu.Unlock()
		v := &judge.Verdict{Verdict: event.Pass, Reason: "tests pass", Score: judge.Score{Value: 1}, Timings: judge.Timings{Total: j.took.Milliseconds()}}
		for _, pin := range j.pins {
			if !strings.Contains(string(p), pin) {
				v = &judge.Verdict{Verdict: event.Fail, Reason: "a test fails"}
			}
		}
		out = append(out, v)
	}
	return out, nil
}

func (j *pinJudge) count() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.judged)
}

// verifyRace is one fork that writes the fix of Add and Max, judged by j.
func verifyRace(t *testing.T, j *pinJudge, o func(*run.Options)) *record.Run {
	r, _ := verifyRaceDir(t, j, o)
	return r
}

func verifyRaceDir(t *testing.T, j *pinJudge, o func(*run.Options)) (*record.Run, string) {
	t.Helper()
	store := newMemStore(map[string]string{"lib/lib.go": verifyBase})
	store.unified = true
	agent := memAgent{act: func(ctx context.Context, files workspace.Files, task engine.Task) engine.Outcome {
		if err := files.Write(ctx, "lib/lib.go", []byte(verifyFixed), 0o644); err != nil {
			return engine.Outcome{State: event.ForkCrashed, Err: err}
		}
		return engine.Outcome{State: event.ForkExited}
	}}
	opts := memRace(t, store, agent, nil)
	opts.Forks = 1
	opts.Judge = func(context.Context, judge.Options) (run.Judger, error) { return j, nil }
	o(&opts)
	r, dir, err := run.Race(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r, dir
}

// The fix's added lines have three mutants: Add's + (ARITHMETIC_BASE) and
// Max's > (CONDITIONALS_BOUNDARY, CONDITIONALS_NEGATION).
var (
	strongPins = []string{"return a + b", "\tif a > b {"}
	weakPins   = []string{"return a + b"}
)

// TestVerifyGate: under MinStrength a fork whose tests catch too few of
// its patch's mutants is not crowned — its reason says "unverified: tests
// too weak" and names the survivors, the run ends unverified — and the
// same fix under a suite that pins it wins, verified.
func TestVerifyGate(t *testing.T) {
	t.Parallel()
	weak := &pinJudge{pins: weakPins}
	r := verifyRace(t, weak, func(o *run.Options) { o.Verify, o.MinStrength = run.DefaultVerify, 0.8 })
	if r.Status != event.RunUnverified || r.Winner != nil {
		t.Fatalf("weak suite: status %s winner %v, want unverified and none", r.Status, r.Winner)
	}
	f := r.Fork[0]
	s := f.Strength
	if s == nil || s.Mutants != 3 || s.Judged != 3 || s.Caught != 1 || !s.Unverified || len(s.Survivors) != 2 {
		t.Fatalf("weak suite: strength %+v, want 1/3 caught, unverified, 2 survivors", s)
	}
	if !strings.HasPrefix(f.Reason, "unverified: tests too weak (1/3 mutants of its patch caught, below --min-strength 0.8); survivors: lib/lib.go:6: > → >=") {
		t.Errorf("weak suite: reason %q", f.Reason)
	}
	if f.Verdict != event.Pass || f.State != event.ForkExited {
		t.Errorf("weak suite: the judge's verdict and the agent's state stay: %s %s", f.Verdict, f.State)
	}
	if weak.count() != 4 { // the fork's patch, then its three mutants
		t.Errorf("weak suite: %d judgements, want 4", weak.count())
	}

	strong := &pinJudge{pins: strongPins}
	r = verifyRace(t, strong, func(o *run.Options) { o.Verify, o.MinStrength = run.DefaultVerify, 0.8 })
	if r.Status != event.RunWon || r.Winner == nil || *r.Winner != 0 {
		t.Fatalf("strong suite: status %s, want won by fork 0", r.Status)
	}
	if s := r.Fork[0].Strength; s == nil || s.Caught != 3 || s.Judged != 3 || s.Unverified || len(s.Survivors) != 0 {
		t.Fatalf("strong suite: strength %+v, want 3/3", s)
	}
}

// TestVerifyBudget: the verifier judges at most Verify mutants, spread over
// the patch; without a gate the weak suite's fork still wins, its strength
// recorded; off, nothing is judged but the fork's patch.
func TestVerifyBudget(t *testing.T) {
	t.Parallel()
	j := &pinJudge{pins: weakPins}
	r := verifyRace(t, j, func(o *run.Options) { o.Verify = 2 })
	if r.Status != event.RunWon {
		t.Fatalf("status %s, want won (no gate)", r.Status)
	}
	s := r.Fork[0].Strength
	if s == nil || s.Mutants != 3 || s.Judged != 2 || s.Unverified || s.Cut != "" {
		t.Fatalf("strength %+v, want 2 of 3 judged", s)
	}
	if j.count() != 3 {
		t.Errorf("%d judgements, want 3 (the patch and 2 mutants)", j.count())
	}
	// every mutant's patch is the fork's with one added line changed
	for _, p := range j.judged[1:] {
		if p == j.judged[0] || !strings.Contains(p, "@@ -1,7 +1,10 @@") {
			t.Errorf("mutant patch:\n%s", p)
		}
	}

	off := &pinJudge{pins: weakPins}
	r = verifyRace(t, off, func(o *run.Options) {})
	if r.Fork[0].Strength != nil || off.count() != 1 {
		t.Fatalf("verifier off: strength %+v, %d judgements", r.Fork[0].Strength, off.count())
	}
}

// TestVerifyTimeCap: no mutant starts that would, taking as long as the
// fork's own judged run, end after the cap; those are not judged —
// neither caught nor survivors — and the strength says so; the crown,
// given before, stands. Under a gate, nothing judged is unverified.
func TestVerifyTimeCap(t *testing.T) {
	t.Parallel()
	j := &pinJudge{pins: strongPins, took: time.Hour}
	r := verifyRace(t, j, func(o *run.Options) { o.Verify, o.VerifyTime = 8, time.Minute })
	if r.Status != event.RunWon {
		t.Fatalf("status %s, want won", r.Status)
	}
	s := r.Fork[0].Strength
	if s == nil || s.Judged != 0 || s.Caught != 0 || len(s.Survivors) != 0 || s.Cut != "3 not started within the time cap" {
		t.Fatalf("strength %+v", s)
	}
	if j.count() != 1 {
		t.Errorf("%d judgements, want only the fork's own", j.count())
	}
	r = verifyRace(t, &pinJudge{pins: strongPins, took: time.Hour}, func(o *run.Options) {
		o.Verify, o.VerifyTime, o.MinStrength = 8, time.Minute, 0.5
	})
	if r.Status != event.RunUnverified || !r.Fork[0].Strength.Unverified {
		t.Fatalf("gated, nothing judged: status %s", r.Status)
	}
	// without a cap of its own the gate judges every mutant, however long
	r = verifyRace(t, &pinJudge{pins: strongPins, took: time.Hour}, func(o *run.Options) { o.Verify, o.MinStrength = 8, 0.5 })
	if r.Status != event.RunWon || r.Fork[0].Strength.Judged != 3 {
		t.Fatalf("gated, no cap: status %s, strength %+v", r.Status, r.Fork[0].Strength)
	}
	// the default cap without a gate, one judged run: the first round
	r = verifyRace(t, &pinJudge{pins: strongPins, took: time.Hour}, func(o *run.Options) { o.Verify = 8 })
	if s := r.Fork[0].Strength; s.Judged != min(3, runtime.NumCPU()) {
		t.Fatalf("default cap: strength %+v, want one round", s)
	}
}

// TestMinStrengthNeedsVerifier: a gate without the verifier, or outside
// 0..1, refuses the race before anything runs.
func TestMinStrengthNeedsVerifier(t *testing.T) {
	t.Parallel()
	for _, o := range []func(*run.Options){
		func(o *run.Options) { o.MinStrength = 0.5 },
		func(o *run.Options) { o.Verify, o.MinStrength = 8, 1.5 },
	} {
		store := newMemStore(map[string]string{"lib/lib.go": verifyBase})
		opts := memRace(t, store, memAgent{}, nil)
		o(&opts)
		if _, _, err := run.Race(context.Background(), opts); err != run.ErrMinStrength {
			t.Errorf("err %v, want ErrMinStrength", err)
		}
	}
}

// TestVerifiedEvent: the verifier's word is one event, after the fork's
// verdict, with its typed payload's keys.
func TestVerifiedEvent(t *testing.T) {
	t.Parallel()
	_, dir := verifyRaceDir(t, &pinJudge{pins: weakPins}, func(o *run.Options) { o.Verify = 8 })
	b, err := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []event.Kind
	var data event.VerifiedData
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e record.Event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, e.Type)
		if e.Type == event.Verified {
			if err := e.Decode(&data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if i, j := slices.Index(kinds, event.VerdictGiven), slices.Index(kinds, event.Verified); i < 0 || j < i {
		t.Fatalf("events %v: want a verified event after the verdict", kinds)
	}
	if data.Caught != 1 || data.Judged != 3 || data.Mutants != 3 {
		t.Errorf("verified data %+v", data)
	}
	if len(data.Survivors) != 2 {
		t.Errorf("survivors %v", data.Survivors)
	}
}
