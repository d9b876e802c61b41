package run

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/judge"
	"github.com/forkbomb/forkbomb/internal/lab/mutant"
)

// The verifier. A passing verdict says the tests pass with the patch; it
// does not say the tests would notice if the patch were wrong. The
// verifier asks them: it mutates the lines the patch added (the mutant
// operators of internal/lab/mutant, for Go, Python and JavaScript), judges
// each mutated patch with the race's own judge — its own fork of pid 1,
// test edits stripped, sentinels, the same verdict rules — and counts the
// mutants the judge fails. A mutant is written into the patch's text, so
// nothing of the fork is run or trusted beyond the file its patch already
// carries, read through the store's bounded, link-refusing Files.

// DefaultVerify is --verify auto's budget: mutants judged per passing
// fork. Eight gives a share in steps of an eighth — enough to tell a
// suite that pins the fix from one that barely touches it — when the time
// allows; without --min-strength the time cap (one judged run of the
// fork's patch) is what bounds the wall time: one round of mutants, as
// many as the cores hold at once (held): one for a Go suite on two cores.
const DefaultVerify = 8

// maxVerifySource bounds the bytes of one changed file the verifier reads
// from a fork to find its mutants.
const maxVerifySource = 1 << 20

// patchMutant is one mutant of a patch: the mutation and the patch that
// carries it.
type patchMutant struct {
	m     mutant.Mutant
	patch []byte
}

// verifyCap is how long the verifier may work on one fork (and the
// comparison of passing forks, from the winner's run), judged runs
// expected to take as long as the fork's own: VerifyTime when set; else,
// under MinStrength, no cap (a gate rests on every mutant of its budget,
// not on how busy the machine was); else one judged run of the fork's
// patch — one round of mutants, as many as the cores hold at once. 0:
// none.
func (o Options) verifyCap(judged time.Duration) time.Duration {
	switch {
	case o.VerifyTime > 0:
		return o.VerifyTime
	case o.MinStrength > 0:
		return 0
	}
	return judged
}

// verify judges up to Options.Verify mutants of fork n's passing patch and
// records the share caught, returning with it the survivors (for the
// comparison of passing forks, compare.go). It returns nil when ctx ended
// first (the fork was killed): nothing is recorded then.
func (r *race) verify(ctx context.Context, n int, name string, patch []byte, v *judge.Verdict) (*event.VerifiedData, []patchMutant) {
	start := time.Now()
	d := &event.VerifiedData{MinStrength: r.o.MinStrength, Survivors: []event.Survivor{}}
	ms := r.patchMutants(ctx, name, patch, v.Stripped)
	d.Mutants = len(ms)
	ms = sample(ms, r.o.Verify)
	judger, err := r.waitJudger()
	if err != nil {
		return nil, nil // the fork's own verdict came from it: unreachable but for a stand-in
	}
	one := time.Duration(v.Timings.Total) * time.Millisecond
	caught := make([]bool, len(ms))
	judged := make([]bool, len(ms))
	within(ctx, len(ms), one, r.o.verifyCap(one), time.Now(), true, r.o.verifyWorkers(held(v.Timings)), func(i int) {
		vs, err := judger.Judge(ctx, [][]byte{ms[i].patch})
		// A run a kill cut short says nothing of the tests.
		if err != nil || len(vs) != 1 || vs[0] == nil || ctx.Err() != nil {
			return
		}
		judged[i], caught[i] = true, vs[0].Verdict != event.Pass
	})
	if ctx.Err() != nil {
		return nil, nil
	}
	cut := 0
	var survivors []patchMutant
	for i, pm := range ms {
		switch {
		case !judged[i]:
			cut++
		case caught[i]:
			d.Judged++
			d.Caught++
		default:
			d.Judged++
			d.Survivors = append(d.Survivors, survivorOf(pm.m))
			survivors = append(survivors, pm)
		}
	}
	if cut > 0 {
		d.Cut = fmt.Sprintf("%d not started within the time cap", cut)
	}
	d.Seconds = time.Since(start).Seconds()
	d.Unverified = r.o.MinStrength > 0 && d.Below(r.o.MinStrength)
	return d, survivors
}

// survivorOf is a mutant as the record lists a survivor.
func survivorOf(m mutant.Mutant) event.Survivor {
	return event.Survivor{File: m.File, Line: m.Line, Operator: m.Operator, Original: m.Original, Replacement: m.Replacement}
}

// within calls do(0), do(1), … from at most w workers, in order, each call
// expected to take cost. It starts none that would end after limit counted
// from begin (limit 0: no cap) — except, with firstRound, each worker's
// first call, counted as starting at begin, unless cost alone is over the
// limit: a cap of one judged run still gets its one round. A call started
// runs to its end (the judge's own timeout bounds a judged run), so no
// work is thrown away. It returns which calls started.
func within(ctx context.Context, n int, cost, limit time.Duration, begin time.Time, firstRound bool, w int, do func(i int)) []bool {
	started := make([]bool, n)
	var mu sync.Mutex
	next := 0
	take := func(first bool) (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= n || ctx.Err() != nil {
			return 0, false
		}
		if limit > 0 && (first && firstRound && cost > limit || !(first && firstRound) && time.Since(begin)+cost > limit) {
			return 0, false
		}
		started[next] = true
		next++
		return next - 1, true
	}
	var wg sync.WaitGroup
	for range min(n, max(w, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for first := true; ; first = false {
				i, ok := take(first)
				if !ok {
					return
				}
				do(i)
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return started
}

// held is how many judged runs like the one timed by t the machine's cores
// hold at once without slowing each other: its wall time over the cores it
// kept busy (Timings.TestCPU), at least one, at most one per core (the
// judge's slots are one per core at most). A Go suite's run — the
// compiler and linker in parallel — holds fewer than a suite run by one
// single-threaded interpreter.
func held(t judge.Timings) int {
	cores := runtime.NumCPU()
	if t.TestCPU <= 0 || t.Test <= 0 {
		return cores
	}
	return min(max(int(float64(cores)*float64(t.Test)/float64(t.TestCPU)), 1), cores)
}

// verifyWorkers are the verifier's judged runs at once, hold being how
// many the cores hold (held): under the default cap of one judged run, no
// more — more would each take longer than the cap counts on (two Go
// suites at once on two cores took about 1.6 times one each), and the
// round would overrun it; otherwise one per core (the runs then slow
// each other, but end sooner all told: a --verify-time or a gate buys
// mutants, not a bound of one run).
func (o Options) verifyWorkers(hold int) int {
	if o.VerifyTime == 0 && o.MinStrength == 0 {
		return hold
	}
	return runtime.NumCPU()
}

// sample keeps at most max mutants, spread evenly over the patch.
func sample(ms []patchMutant, max int) []patchMutant {
	if max <= 0 || len(ms) <= max {
		return ms
	}
	out := make([]patchMutant, 0, max)
	for j := range max {
		out = append(out, ms[j*len(ms)/max])
	}
	return out
}

// patchMutants are the mutants of the lines patch adds to files the judge
// keeps (stripped names those it does not), each written into a copy of
// the patch. A file the fork holds differently from its patch, or one too
// big to read, gives none.
func (r *race) patchMutants(ctx context.Context, name string, patch []byte, stripped []string) []patchMutant {
	_, files, err := r.o.Store.Files(ctx, name)
	if err != nil {
		return nil
	}
	lines := bytes.SplitAfter(patch, []byte("\n"))
	var out []patchMutant
	for _, f := range patchFiles(lines) {
		if ctx.Err() != nil || slices.Contains(stripped, f.path) {
			continue
		}
		src, _, err := files.Read(ctx, f.path, maxVerifySource)
		if err != nil {
			continue
		}
		ms, err := mutant.Generate(f.path, src)
		if err != nil {
			continue // a file that does not parse has no mutants of ours
		}
		for _, m := range ms {
			if p, ok := f.rewrite(lines, src, m); ok {
				out = append(out, patchMutant{m: m, patch: p})
			}
		}
	}
	return out
}

// patchFile is one file's part of a patch: the new file's path, and where
// each line the patch adds sits in the patch.
type patchFile struct {
	path  string
	added map[int]int // new-file line number → index of its '+' line
	hunk  map[int]int // new-file line number → index of its hunk's header
	end   int         // index after the file's last line
}

// patchFiles reads the files of a git patch. A quoted path (git's C
// quoting of unusual names) is skipped: it is not worth mutating.
func patchFiles(lines [][]byte) []*patchFile {
	var out []*patchFile
	var cur *patchFile
	for i := 0; i < len(lines); i++ {
		l := string(lines[i])
		switch {
		case strings.HasPrefix(l, "diff --git "):
			if cur != nil {
				cur.end = i
			}
			cur = nil
		case strings.HasPrefix(l, "+++ b/"):
			cur = &patchFile{path: strings.TrimRight(l[len("+++ b/"):], "\r\n"), added: map[int]int{}, hunk: map[int]int{}, end: len(lines)}
			out = append(out, cur)
		case strings.HasPrefix(l, "@@ -") && cur != nil:
			oldN, newN, newStart, ok := hunkRanges(l)
			if !ok {
				cur = nil
				continue
			}
			h, n := i, newStart
			for i++; i < len(lines) && len(lines[i]) > 0 && (oldN > 0 || newN > 0); i++ {
				switch lines[i][0] {
				case '+':
					cur.added[n], cur.hunk[n] = i, h
					n, newN = n+1, newN-1
				case '-':
					oldN--
				case '\\':
				default:
					n, oldN, newN = n+1, oldN-1, newN-1
				}
			}
			i--
		}
	}
	return out
}

// hunkRanges reads "@@ -a[,b] +c[,d] @@": the old and new line counts and
// the new start.
func hunkRanges(h string) (oldN, newN, newStart int, ok bool) {
	rest, ok := strings.CutPrefix(h, "@@ -")
	if !ok {
		return
	}
	old, rest, ok1 := strings.Cut(rest, " +")
	nw, _, ok2 := strings.Cut(rest, " @@")
	if !ok1 || !ok2 {
		return 0, 0, 0, false
	}
	_, oldN, ok1 = rangeOf(old)
	newStart, newN, ok2 = rangeOf(nw)
	return oldN, newN, newStart, ok1 && ok2
}

// rangeOf reads "start[,count]" (count 1 when absent).
func rangeOf(s string) (start, count int, ok bool) {
	a, b, has := strings.Cut(s, ",")
	start, err := strconv.Atoi(a)
	if err != nil {
		return 0, 0, false
	}
	count = 1
	if has {
		if count, err = strconv.Atoi(b); err != nil {
			return 0, 0, false
		}
	}
	return start, count, true
}

// rewrite returns the patch with mutant m made in the lines it adds to f:
// m's lines must all be added lines, one run of them in one hunk, and the
// patch must hold them as src does. The hunk's new count (and the new
// start of the file's later hunks) follow the lines the mutation adds or
// removes.
func (f *patchFile) rewrite(lines [][]byte, src []byte, m mutant.Mutant) ([]byte, bool) {
	first, ok := f.added[m.Line]
	if !ok {
		return nil, false
	}
	srcLines := strings.SplitAfter(string(src), "\n")
	for k := m.Line; k <= m.EndLine; k++ {
		at, ok := f.added[k]
		if !ok || at != first+(k-m.Line) || f.hunk[k] != f.hunk[m.Line] || k > len(srcLines) {
			return nil, false
		}
		if strings.TrimSuffix(string(lines[at][1:]), "\n") != strings.TrimSuffix(srcLines[k-1], "\n") {
			return nil, false
		}
	}
	// The mutated text of lines Line..EndLine, one '+' line each.
	ls := len(strings.Join(srcLines[:m.Line-1], ""))
	le := len(strings.Join(srcLines[:m.EndLine], ""))
	le = len(strings.TrimSuffix(string(src[:le]), "\n"))
	mutated := string(src[ls:m.Start]) + m.Replacement + string(src[m.End:le])
	var repl [][]byte
	for _, l := range strings.Split(mutated, "\n") {
		repl = append(repl, []byte("+"+l+"\n"))
	}
	delta := len(repl) - (m.EndLine - m.Line + 1)
	last := first + (m.EndLine - m.Line)
	out := make([][]byte, 0, len(lines)+delta)
	for i, l := range lines {
		switch {
		case i == first:
			out = append(out, repl...)
		case i > first && i <= last:
		case delta != 0 && i == f.hunk[m.Line]:
			out = append(out, shiftHunk(l, 0, delta))
		case delta != 0 && i > last && i < f.end && bytes.HasPrefix(l, []byte("@@ -")):
			out = append(out, shiftHunk(l, delta, 0))
		default:
			out = append(out, l)
		}
	}
	return bytes.Join(out, nil), true
}

// shiftHunk moves a hunk header's new start by start and its new count by
// count.
func shiftHunk(h []byte, start, count int) []byte {
	s := string(h)
	rest := strings.TrimPrefix(s, "@@ -")
	old, rest, _ := strings.Cut(rest, " +")
	nw, tail, _ := strings.Cut(rest, " @@")
	a, n, _ := rangeOf(nw)
	return fmt.Appendf(nil, "@@ -%s +%d,%d @@%s", old, a+start, n+count, tail)
}
