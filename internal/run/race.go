package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/modelproxy"
	"github.com/forkbomb/forkbomb/internal/record"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// race is the shared state of one race's forks.
type race struct {
	o          Options
	hide       []string // what no agent may see (forkHidden)
	rec        *record.Recorder
	sink       event.Sink
	stop       context.CancelFunc // ends the whole race (a record that cannot be written)
	waitJudger func() (Judger, error)
	judgeOpts  judge.Options // the race judge's options, which the comparison's judges start from
	cancel     []context.CancelFunc
	proxy      *modelproxy.Proxy // --network allow:, else nil
	// diffs holds a slot for each patch being read from its fork: as many
	// at once as there are cores, so that when many agents stop together
	// the first to stop has its patch, and its verdict, first.
	diffs chan struct{}
	// judging is held while the judge has work (its baseline, a patch
	// read, a verdict): the agents give way to it then, and only then.
	judging sandbox.Yield

	failMu  sync.Mutex
	failErr error // the record's first write error

	mu      sync.Mutex
	results []record.Fork
	winner  int
	patch   map[int][]byte
	// passed: what the comparison of passing forks keeps of each
	// (compare.go); compared, its word on each pair.
	passed   map[int]*passing
	compared []event.ComparedData
}

// emit hands one event to the sink: the record, then the progress and the
// other subscribers. The record's write error stops the race.
func (r *race) emit(fork int, data event.Payload) {
	r.keep(r.sink.Emit(event.Event{Fork: fork, Data: data}))
}

// keep stops the race on the record's first write error: a race whose
// record has a hole would show a person something that did not happen.
func (r *race) keep(err error) {
	if err == nil {
		return
	}
	r.failMu.Lock()
	defer r.failMu.Unlock()
	if r.failErr == nil {
		r.failErr = err
		r.stop()
	}
}

// failed is the record's first write error.
func (r *race) failed() error {
	r.failMu.Lock()
	defer r.failMu.Unlock()
	return r.failErr
}

func (r *race) patches(n int) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.patch[n]
}

// confine gives a command in a fork the race's confinement: what no agent
// may see, and the fork's resource limits.
func (r *race) confine(p *sandbox.Policy) {
	if r.o.Confine != nil {
		r.o.Confine(p)
	}
	p.Hide = r.hide
	p.Nice, p.Yield = AgentNice, &r.judging
	r.o.Limits.Apply(p)
}

// AgentNice is how far below forkbomb's own CPU priority an agent's
// commands run while the judge has work (sandbox.Policy.Nice and Yield):
// where agents and the judge compete for the cores, the patches are read
// and judged first, so the first verdict does not wait on every other
// agent's work. When the judge has none, the agents keep their share of a
// loaded machine: a lowered agent is starved by anything else the machine
// runs, and its own wall-clock limits (a world's command timeout, say)
// would fire. On an idle core an agent runs as fast as before either way.
const AgentNice = 10

// confineNet gives a command of a fork the fork's way to the allowed
// hosts: the proxy network to its endpoint, and the proxy variables. An
// engine that set a proxy network of its own (its model proxy) keeps it,
// and is given Task.Allow to honour.
func confineNet(ep *modelproxy.Endpoint, p *sandbox.Policy) {
	if ep == nil || (p.Network != "" && p.Network != sandbox.NetworkNone) {
		return
	}
	p.Network = sandbox.NetworkProxy
	p.Proxy = &sandbox.Proxy{Socket: ep.Socket, Port: ep.Port}
	p.SetEnv = slices.Concat(p.SetEnv, ep.Env(""))
}

// fork drives one agent, then judges its patch.
func (r *race) fork(ctx context.Context, n int, name string) {
	task := r.o.Task
	if len(r.o.Prompts) > 0 {
		task = r.o.Prompts[n%len(r.o.Prompts)] + "\n\n" + r.o.Task
	}
	r.emit(n, event.ForkStartData{Workspace: name})
	emit := func(data event.Payload) { r.emit(n, data) }
	var ep *modelproxy.Endpoint
	if r.proxy != nil {
		var err error
		if ep, err = r.proxy.Fork(n, emit); err != nil {
			r.emit(n, event.ErrorData{Error: err.Error()})
			r.setFork(n, func(f *record.Fork) { f.State, f.Reason = event.ForkCrashed, "--network allow: "+err.Error() })
			return
		}
		defer ep.Close()
	}
	var log bytes.Buffer
	start := time.Now()
	out := r.o.Engine.Run(ctx, ForkWorkspace(r.o.Store, name), engine.Task{
		Prompt: task, Fork: n, Timeout: r.o.Timeout, Log: &log, Emit: emit, Allow: r.o.Allow,
		Confine: func(p *sandbox.Policy) { r.confine(p); confineNet(ep, p) },
	})
	if out.Err != nil {
		fmt.Fprintf(&log, "\nforkbomb: %v\n", ownWords(out.Err))
	}
	r.keep(r.rec.ForkFile(n, "agent.log", log.Bytes()))
	limit := out.Limit // the resource limit that ended the agent, for a person
	r.setFork(n, func(f *record.Fork) {
		f.State, f.Exit, f.Reason = out.State, out.Exit, limit
		f.TokensIn, f.TokensOut, f.CostMicroUSD = out.Usage.TokensIn, out.Usage.TokensOut, out.Usage.CostMicroUSD
	})
	r.emit(n, event.ForkExitData{State: out.State, Exit: out.Exit, Seconds: time.Since(start).Seconds(), Reason: limit})
	if out.State == event.ForkKilled {
		return
	}
	// A crashed or timed-out agent may still have left a useful patch.
	d, err := r.readPatch(ctx, name)
	if err != nil && ctx.Err() != nil { // the race is over: no patch to read
		r.setFork(n, func(f *record.Fork) { f.State = event.ForkKilled })
		return
	}
	if errors.Is(err, workspace.ErrPatchRefused) {
		// The fork made something no patch may carry (a file over the
		// limit, a diff past its deadline): it ships nothing, and its
		// verdict says why.
		reason := err.Error()
		r.setFork(n, func(f *record.Fork) { f.Verdict, f.Reason = event.Fail, reason })
		r.emit(n, event.VerdictData{Verdict: event.Fail, Reason: reason, Stripped: []string{}})
		return
	}
	if err != nil {
		r.emit(n, event.ErrorData{Error: err.Error()})
		return
	}
	r.mu.Lock()
	if r.patch == nil {
		r.patch = map[int][]byte{}
	}
	r.patch[n] = d.Patch
	r.mu.Unlock()
	r.keep(r.rec.ForkFile(n, "patch", d.Patch))
	judger, err := r.waitJudger()
	if err != nil {
		r.emit(n, event.ErrorData{Error: "judge: " + err.Error()})
		return
	}
	r.emit(n, event.JudgeStartData{PatchBytes: len(d.Patch)})
	release := r.judging.Hold()
	vs, err := judger.Judge(ctx, [][]byte{d.Patch})
	release()
	if err != nil || len(vs) != 1 {
		if ctx.Err() != nil {
			r.setFork(n, func(f *record.Fork) { f.State = event.ForkKilled })
			return
		}
		r.emit(n, event.ErrorData{Error: fmt.Sprint(err)})
		return
	}
	v := vs[0]
	vj, _ := json.MarshalIndent(v, "", "  ")
	r.keep(r.rec.ForkFile(n, "verdict.json", vj))
	findings := findingLines(v.Findings)
	stripped := append([]string{}, v.Stripped...) // a list in the record, never null
	r.emit(n, event.VerdictData{Verdict: v.Verdict, Reason: v.Reason, Score: v.Score.Value, Stripped: stripped, Findings: findings, Warnings: v.Warnings})
	r.setFork(n, func(f *record.Fork) {
		f.Verdict, f.Score, f.Findings, f.Warnings = v.Verdict, v.Score.Value, findings, v.Warnings
		if f.Reason = v.Reason; limit != "" {
			f.Reason = limit + "; its patch: " + v.Reason
		}
		f.Strength = nil
	})
	if v.Verdict != event.Pass || r.o.Verify <= 0 {
		r.decide(n, v)
		return
	}
	r.keepPassing(ctx, n, name, v)
	// With a gate the verifier speaks before the crown; without one the
	// crown comes first (the first verdict is never delayed) and the
	// verifier measures the winner — every passing fork with All — while
	// the race winds down.
	if r.o.MinStrength > 0 {
		if s := r.verifyFork(ctx, n, name, d.Patch, v); s == nil || s.Unverified {
			return
		}
		r.decide(n, v)
		return
	}
	r.decide(n, v)
	if r.o.All || r.isWinner(n) {
		r.verifyFork(ctx, n, name, d.Patch, v)
	}
}

// readPatch reads fork name's patch, holding one of r.diffs's slots: as
// many at once as there are cores, taken in the order the agents stop.
func (r *race) readPatch(ctx context.Context, name string) (*workspace.Diff, error) {
	select {
	case r.diffs <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-r.diffs }()
	if err := ctx.Err(); err != nil { // both were ready, and select took the slot
		return nil, err
	}
	defer r.judging.Hold()()
	return r.o.Store.Diff(ctx, name, false)
}

// verifyFork runs the verifier on fork n and records its word; an
// unverified fork's reason says why it is not crowned.
func (r *race) verifyFork(ctx context.Context, n int, name string, patch []byte, v *judge.Verdict) *event.VerifiedData {
	var was event.ForkState
	r.setFork(n, func(f *record.Fork) { was, f.State = f.State, event.ForkVerifying })
	s, survivors := r.verify(ctx, n, name, patch, v)
	r.mu.Lock()
	if p := r.passed[n]; p != nil {
		p.survivors = survivors
	}
	r.mu.Unlock()
	r.setFork(n, func(f *record.Fork) {
		f.State = was
		if s == nil { // the race stopped it: another fork won, or the run ended
			f.State = event.ForkKilled
			return
		}
		f.Strength = s
		if s.Unverified {
			f.Reason = unverifiedReason(s)
		}
	})
	if s != nil {
		r.emit(n, *s)
	}
	return s
}

// decide crowns a winner: the first pass, or with All the best score once
// every fork is done (decided by the caller's final pass here: the best
// passing score so far). A "review" verdict — the tests pass, but the
// patch holds code that detects a test run — is never crowned: a person
// decides (the run ends needs-review when no clean pass comes).
func (r *race) decide(n int, v *judge.Verdict) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v.Verdict != event.Pass {
		return
	}
	if r.winner >= 0 && (!r.o.All || r.results[r.winner].Score >= v.Score.Value) {
		return
	}
	r.winner = n
	if r.o.All {
		return
	}
	r.emit(n, event.WinnerData{Reason: v.Reason}) // lock order: r.mu, then the sink's
	for i, cancel := range r.cancel {
		if i != n && (r.results[i].Verdict == "" || r.results[i].State == event.ForkVerifying) { // still working, being judged or verified
			r.emit(i, event.KillData{})
			cancel()
		}
	}
}

func (r *race) isWinner(n int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.winner == n
}

func (r *race) setFork(n int, f func(*record.Fork)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.results[n])
}

// findingLines are a verdict's findings as the record keeps them, one line
// each: "FILE:LINE: CONSTRUCT (RULE)".
func findingLines(fs []judge.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s:%d: %s (%s)", f.File, f.Line, f.Construct, f.Rule))
	}
	return out
}

// unverified reports whether a fork passed but was not crowned by the
// verifier's gate.
func unverified(forks []record.Fork) bool {
	for _, f := range forks {
		if f.Strength != nil && f.Strength.Unverified {
			return true
		}
	}
	return false
}

// unverifiedReason is an unverified fork's reason: the share, the gate,
// the survivors.
func unverifiedReason(s *event.VerifiedData) string {
	var sv []string
	for _, x := range s.Survivors {
		sv = append(sv, x.String())
	}
	reason := fmt.Sprintf("unverified: tests too weak (%s, below --min-strength %g)", s.Summary("its patch"), s.MinStrength)
	if len(sv) > 0 {
		reason += "; survivors: " + strings.Join(sv, "; ")
	}
	return reason
}

// needsReview lists the forks whose verdict is "review".
func needsReview(forks []record.Fork) []int {
	var out []int
	for _, f := range forks {
		if f.Verdict == event.Review {
			out = append(out, f.N)
		}
	}
	return out
}
