package worldrace

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/world"
)

// Judge readies the race's judge (run.Options.Judge): jo.Test is the check, a shell script run
// in a fresh copy of the trunk at jo.Rev with a fork's patch applied — a world no agent ever
// had, with the trunk's shell state, so nothing an agent left (a function named like a command,
// a background job) can change what the check sees; status 0 passes. The race's first pass
// wins.
func (s *Store) Judge(ctx context.Context, jo judge.Options) (run.Judger, error) {
	base := s.file("judge-base")
	if err := s.copyTrunk(base, jo.Repo, jo.Rev); err != nil {
		return nil, fmt.Errorf("%w: %v", judge.ErrCannotJudge, err)
	}
	return &checker{s: s, base: base, rev: jo.Rev, check: jo.Test}, nil
}

// checker judges patches by the check.
type checker struct {
	s          *Store
	base       string // a copy of the trunk, never changed
	rev, check string
}

// Judge implements run.Judger.
func (c *checker) Judge(ctx context.Context, patches [][]byte) ([]*judge.Verdict, error) {
	var out []*judge.Verdict
	for _, p := range patches {
		v, err := c.one(ctx, p)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (c *checker) one(ctx context.Context, patch []byte) (*judge.Verdict, error) {
	start := time.Now()
	v := &judge.Verdict{Verdict: event.Fail, Stripped: []string{}, TestCmd: c.check, RanCmd: c.check, Base: c.rev}
	defer func() { v.Timings.Total = time.Since(start).Milliseconds() }()
	w, err := world.Load(c.base, c.s.limits.MaxSize)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", judge.ErrCannotJudge, err)
	}
	if err := w.ApplyPatch(patch, c.s.limits.MaxSize); err != nil {
		v.Reason = err.Error()
		return v, nil
	}
	v.Applied = true
	c.s.mu.Lock()
	c.s.checks++
	file := c.s.file("check-" + strconv.Itoa(c.s.checks))
	c.s.mu.Unlock()
	defer os.Remove(file + ".lock")
	defer os.Remove(file)
	if err := w.Save(file); err != nil {
		return nil, fmt.Errorf("%w: %v", judge.ErrCannotJudge, err)
	}
	t := time.Now()
	r, err := world.ExecFile(ctx, file, c.check, nil, c.s.limits)
	v.Timings.Test = time.Since(t).Milliseconds()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		v.Reason = "the check could not run: " + err.Error()
		return v, nil
	}
	v.ExitCode = r.Status
	if r.Status != 0 {
		v.OutputTail = tail(r.Stdout, r.Stderr)
		v.Reason = fmt.Sprintf("check exited %d: %s", r.Status, v.OutputTail)
		v.Limit = r.Limit
		return v, nil
	}
	v.Verdict, v.Reason, v.Score.Value = event.Pass, "check exited 0", 1
	return v, nil
}

// tail is the end of a check's output, for its verdict.
func tail(out, errOut []byte) string {
	b := bytes.TrimSpace(append(append([]byte(nil), out...), errOut...))
	if len(b) > 400 {
		b = b[len(b)-400:]
	}
	return string(b)
}
