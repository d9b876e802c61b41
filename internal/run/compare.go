package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// The comparison of passing forks. Two forks whose patches differ may
// both pass the suite and still behave differently where the suite does
// not look — and a test one of them wrote may look there. Once every
// verdict is given, the winner (or, without one, the first passing fork)
// is compared with each other passing fork whose patch differs, both
// ways: a judge whose hidden tests are the test files one fork's patch
// added or changed (what the race's judge stripped from it) judges that
// fork's own patch (the control), the other fork's patch, and the other
// fork's survivors. A test the control passes and the other fork's code
// fails is a disagreement; a test the other fork's code passes and one of
// its survivors fails pins a behaviour the suite does not. Every run is
// the race judge's own: a fresh fork of pid 1, the patch stripped and
// applied, the tests laid over it, confined and offline, sentinels
// planted; only names of tests are compared, never a fork's word.

// maxCompared bounds the forks the winner is compared with: the default
// four forks are the winner and three others.
const maxCompared = 3

// maxKeptTests bounds the bytes of one fork's test files kept for the
// comparison (each file at most maxVerifySource).
const maxKeptTests = 8 << 20

// maxListed bounds the disagreements listed for one fork's code against
// another's tests.
const maxListed = 20

// passing is what the comparison keeps of a passing fork while its
// workspace exists: the test files its patch added or changed, what was
// left out of them, how long its judged run took, and its survivors.
type passing struct {
	tests     map[string]keptFile
	notes     []string
	one       time.Duration
	hold      int // judged runs like its own the cores hold at once (held)
	survivors []patchMutant
}

type keptFile struct {
	data []byte
	mode fs.FileMode
}

// keepPassing keeps fork n's test files — the files its verdict says were
// stripped, as the fork holds them, read through the store's bounded,
// link-refusing Files — for the comparison.
func (r *race) keepPassing(ctx context.Context, n int, name string, v *judge.Verdict) {
	p := &passing{tests: map[string]keptFile{}, one: time.Duration(v.Timings.Total) * time.Millisecond, hold: held(v.Timings)}
	if len(v.Stripped) > 0 {
		_, files, err := r.o.Store.Files(ctx, name)
		if err != nil {
			p.notes = append(p.notes, fmt.Sprintf("fork %d's test files could not be read: %v", n, err))
		}
		total := 0
		for _, f := range v.Stripped {
			if err != nil {
				break
			}
			data, mode, rerr := files.Read(ctx, f, maxVerifySource)
			switch {
			case errors.Is(rerr, fs.ErrNotExist):
				// deleted or renamed away: tests laid over the base only
				// add and replace files
			case rerr != nil || total+len(data) > maxKeptTests:
				p.notes = append(p.notes, fmt.Sprintf("fork %d's %s is left out of its tests (not a regular file of at most %d MiB, or past %d MiB in all)", n, f, maxVerifySource>>20, maxKeptTests>>20))
			default:
				total += len(data)
				p.tests[f] = keptFile{data: data, mode: mode}
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.passed == nil {
		r.passed = map[int]*passing{}
	}
	r.passed[n] = p
}

// pairs are the forks to compare, the anchor first in each — the winner,
// or the first passing fork — and the passing forks left out by
// maxCompared. A fork whose patch is the anchor's, byte for byte, has
// nothing to compare.
func (r *race) pairs() (pairs [][2]int, left []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ok := func(n int) bool { return r.passed[n] != nil && r.results[n].Verdict == event.Pass }
	anchor := -1
	if r.winner >= 0 && ok(r.winner) {
		anchor = r.winner
	} else {
		for n := range r.results {
			if ok(n) {
				anchor = n
				break
			}
		}
	}
	if anchor < 0 {
		return nil, nil
	}
	for n := range r.results {
		if n == anchor || !ok(n) || bytes.Equal(r.patch[n], r.patch[anchor]) {
			continue
		}
		if len(pairs) == maxCompared {
			left = append(left, n)
			continue
		}
		pairs = append(pairs, [2]int{anchor, n})
	}
	return pairs, left
}

// direction is one fork's code judged against another's tests.
type direction struct {
	pair, tests, code int
}

// crossResult is what one direction found.
type crossResult struct {
	disagree []event.Disagreement
	pinned   []event.CrossSurvivor
	notes    []string
}

// compare judges each pair of passing forks against each other's tests
// and records one compared event per pair. It is part of the verifier
// (off with it) and works within its time cap: without --min-strength or
// --verify-time, one round — each pair's directions, as many as there are
// cores, and no survivor. It runs after every verdict and the crown, so it
// delays neither.
func (r *race) compare(ctx context.Context) {
	if r.o.Verify <= 0 || ctx.Err() != nil {
		return
	}
	pairs, left := r.pairs()
	if len(pairs) == 0 {
		return
	}
	start := time.Now()
	out := make([]event.ComparedData, len(pairs))
	for i, p := range pairs {
		out[i] = event.ComparedData{Forks: []int{p[0], p[1]}, Disagreements: []event.Disagreement{}, Pinned: []event.CrossSurvivor{}, Notes: []string{}}
	}
	r.mu.Lock()
	passed, patches, strength := map[int]*passing{}, map[int][]byte{}, map[int]*event.VerifiedData{}
	for _, p := range pairs {
		for _, n := range p {
			passed[n], patches[n], strength[n] = r.passed[n], r.patch[n], r.results[n].Strength
		}
	}
	r.mu.Unlock()

	overlays := map[int]string{}
	tmp, err := sandbox.MkdirTemp("compare")
	if err == nil {
		defer os.RemoveAll(tmp)
		os.Chmod(tmp, 0o755) // the judge's sandbox reads the tests laid over
	}
	for n, p := range passed {
		if len(p.tests) == 0 {
			continue
		}
		werr := err
		if werr == nil {
			dir := filepath.Join(tmp, strconv.Itoa(n))
			if werr = writeTests(dir, p.tests); werr == nil {
				overlays[n] = dir
				continue
			}
		}
		p.notes = append(p.notes, fmt.Sprintf("fork %d's tests could not be laid out for the judge: %v", n, werr))
	}

	var dirs []direction
	for i, p := range pairs {
		a, b := p[0], p[1]
		o := &out[i]
		o.Notes = append(append(o.Notes, passed[a].notes...), passed[b].notes...)
		switch {
		case len(passed[a].tests) == 0 && len(passed[b].tests) == 0:
			o.Notes = append(o.Notes, fmt.Sprintf("neither fork %d nor fork %d added or changed a test: only the suite compares them, and both pass it", min(a, b), max(a, b)))
			o.Unpinned, o.Notes = unpinned(a, b, strength[a], strength[b], o.Notes)
		case len(passed[a].tests) == 0:
			o.Notes = append(o.Notes, fmt.Sprintf("fork %d added or changed no test: fork %d's code is judged by no test of fork %d", a, b, a))
		case len(passed[b].tests) == 0:
			o.Notes = append(o.Notes, fmt.Sprintf("fork %d added or changed no test: fork %d's code is judged by no test of fork %d", b, a, b))
		}
		for _, d := range []direction{{i, a, b}, {i, b, a}} {
			if overlays[d.tests] != "" {
				dirs = append(dirs, d)
			}
		}
	}
	if i := len(out) - 1; len(left) > 0 {
		out[i].Notes = append(out[i].Notes, fmt.Sprintf("fork(s) %s passed too and were not compared (at most %d are compared with fork %d)", joinInts(left), maxCompared, pairs[0][0]))
	}

	one := passed[pairs[0][0]].one
	limit := r.o.verifyCap(one)
	res := make([]crossResult, len(dirs))
	// As the verifier's mutants: no direction starts after the cap, each
	// worker's first counted as starting at once. One started runs to its
	// end — a baseline with the tests laid over (outside the judge's
	// slots, as the race's own baseline; one per core at most), then the
	// two patches.
	// A pair's directions start together, one per core (each is the
	// comparison's one look at that direction); the survivors after them
	// go as the verifier's mutants do.
	hold := passed[pairs[0][0]].hold
	started := within(ctx, len(dirs), one, limit, start, true, runtime.NumCPU(), func(i int) {
		d := dirs[i]
		res[i] = r.crossJudge(ctx, d, overlays[d.tests], passed[d.tests].tests, patches[d.tests], patches[d.code], passed[d.code].survivors, one, limit, hold, start)
	})
	if ctx.Err() != nil {
		return // the run was interrupted: a comparison cut short says nothing
	}
	for i, d := range dirs {
		o := &out[d.pair]
		if !started[i] {
			o.Notes = append(o.Notes, fmt.Sprintf("fork %d's code was not judged against fork %d's tests within the time cap (--verify-time)", d.code, d.tests))
			continue
		}
		o.Disagreements = append(o.Disagreements, res[i].disagree...)
		o.Pinned = append(o.Pinned, res[i].pinned...)
		o.Notes = append(o.Notes, res[i].notes...)
	}
	secs := time.Since(start).Seconds()
	for i := range out {
		out[i].Seconds = secs
		r.emit(event.RunLevel, out[i])
	}
	r.mu.Lock()
	r.compared = out
	r.mu.Unlock()
}

// crossJudge judges fork d.code's patch, and its survivors, against fork
// d.tests's tests (laid over from overlay), with fork d.tests's own patch
// as the control.
func (r *race) crossJudge(ctx context.Context, d direction, overlay string, tests map[string]keptFile, control, code []byte, survivors []patchMutant, one, limit time.Duration, hold int, begin time.Time) (out crossResult) {
	jo := r.judgeOpts
	jo.Hidden = append([]string{overlay}, r.judgeOpts.Hidden...) // the user's hidden tests are laid over last: theirs is the word
	j, err := r.o.Judge(ctx, jo)
	if err != nil {
		out.notes = append(out.notes, fmt.Sprintf("fork %d's tests could not be judged: %v", d.tests, err))
		return out
	}
	if c, ok := j.(interface{ Close() }); ok {
		defer c.Close()
	}
	vs, _ := j.Judge(ctx, [][]byte{control, code})
	var ctrl, other *judge.Verdict
	if len(vs) == 2 {
		ctrl, other = vs[0], vs[1]
	}
	ctrlTests, why := testsOf(ctrl)
	if why != "" {
		out.notes = append(out.notes, fmt.Sprintf("fork %d's own code with its tests: %s; they say nothing of fork %d", d.tests, why, d.code))
	} else if own := failing(ctrlTests); len(own) > 0 {
		out.notes = append(out.notes, fmt.Sprintf("fork %d's own code fails %s with its tests: left out", d.tests, listed(own)))
	}
	otherTests, why := testsOf(other)
	if why != "" {
		out.notes = append(out.notes, fmt.Sprintf("fork %d's code with fork %d's tests: %s", d.code, d.tests, why))
		return out
	}
	if ctrlTests != nil {
		names, builds := lost(ctrlTests, otherTests)
		for _, t := range names {
			file, line := locate(tests, t)
			out.disagree = append(out.disagree, event.Disagreement{Tests: d.tests, Fails: d.code, Test: t, File: file, Line: line})
		}
		for _, b := range builds {
			out.disagree = append(out.disagree, event.Disagreement{Tests: d.tests, Fails: d.code, Test: b, Build: true})
		}
		if len(out.disagree) > maxListed {
			out.notes = append(out.notes, fmt.Sprintf("%d more test(s) of fork %d that fork %d fails are not listed", len(out.disagree)-maxListed, d.tests, d.code))
			out.disagree = out.disagree[:maxListed]
		}
	}

	verdicts := make([]*judge.Verdict, len(survivors))
	started := within(ctx, len(survivors), one, limit, begin, false, r.o.verifyWorkers(hold), func(i int) {
		if vs, err := j.Judge(ctx, [][]byte{survivors[i].patch}); err == nil && len(vs) == 1 {
			verdicts[i] = vs[0]
		}
	})
	cut, unread := 0, 0
	for i, s := range survivors {
		if !started[i] {
			cut++
			continue
		}
		st, why := testsOf(verdicts[i])
		if why != "" {
			unread++
			continue
		}
		names, builds := lost(otherTests, st)
		if caught := append(names, builds...); len(caught) > 0 {
			out.pinned = append(out.pinned, event.CrossSurvivor{Fork: d.code, Survivor: survivorOf(s.m), CaughtBy: caught})
		}
	}
	if cut > 0 {
		out.notes = append(out.notes, fmt.Sprintf("%d survivor(s) of fork %d not judged with fork %d's tests within the time cap (--verify-time)", cut, d.code, d.tests))
	}
	if unread > 0 {
		out.notes = append(out.notes, fmt.Sprintf("%d survivor(s) of fork %d gave no result readable by name with fork %d's tests", unread, d.code, d.tests))
	}
	return out
}

// unpinned are the survivors one fork's patch has and the other's has
// not (the same mutation of the same text in the same file counts as
// shared, wherever its line), for a pair where neither fork wrote a test.
func unpinned(a, b int, sa, sb *event.VerifiedData, notes []string) ([]event.CrossSurvivor, []string) {
	for i, s := range []*event.VerifiedData{sa, sb} {
		if s == nil {
			notes = append(notes, fmt.Sprintf("fork %d was not verified: its survivors are unknown", []int{a, b}[i]))
		}
	}
	if sa == nil || sb == nil {
		return nil, notes
	}
	same := func(x, y event.Survivor) bool {
		return x.File == y.File && x.Operator == y.Operator && x.Original == y.Original && x.Replacement == y.Replacement
	}
	var out []event.CrossSurvivor
	for _, side := range []struct {
		n          int
		own, other []event.Survivor
	}{{a, sa.Survivors, sb.Survivors}, {b, sb.Survivors, sa.Survivors}} {
		for _, s := range side.own {
			if !slices.ContainsFunc(side.other, func(o event.Survivor) bool { return same(s, o) }) {
				out = append(out, event.CrossSurvivor{Fork: side.n, Survivor: s})
			}
		}
	}
	return out, notes
}

// writeTests lays a fork's test files out under dir as the repository
// holds them. Their names come from a fork's patch: they are written
// through an os.Root, never by joining strings.
func writeTests(dir string, files map[string]keptFile) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for p, f := range files {
		if d := path.Dir(p); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		if err := root.WriteFile(p, f.data, 0o644|f.mode.Perm()&0o111); err != nil {
			return err
		}
	}
	return nil
}

// listed is names for a line: the first few, and how many more.
func listed(names []string) string {
	if len(names) > 5 {
		return strings.Join(names[:5], ", ") + fmt.Sprintf(" and %d more", len(names)-5)
	}
	return strings.Join(names, ", ")
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
