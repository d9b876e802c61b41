package judge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// The warmed build cache: why a patched Go run need not compile the
// sentinels' tests again, and why that is safe.
//
// Every judged copy gets sentinel tests (sentinel.go) — for Go, a new
// _test.go file in each package — so every judged run compiled every
// package's tests again, whatever the patch changed: that was nearly all
// of a judged Go run's cost over go test's (go-cmp, a patch to a README:
// 2.35× go test's CPU with sentinels, 1.16× without; BenchmarkJudgeGoCmp).
// A Judger now draws its sentinels once, from the base; with
// Options.Warm, once the baseline has run, it runs the test command once
// more on the base with those sentinels planted and keeps that run's
// writes to GOCACHE as a second read-only layer, above the baseline's.
// Go's build cache keys a compiled package on its sources, so a patched
// run finds each package whose sources the patch left alone compiled
// already, sentinels and all, and compiles the rest.
//
// Why the defences hold:
//   - The layer is written by one run of the base's own code with the
//     judge's own sentinels — the baseline layer's writer plus the judge's
//     files — and by no patched run: a patched run's writes still go to
//     its throwaway layer and are gone when it ends. The layer lives in
//     the judge's cache folder, which no fork and no judged run sees but
//     through the read-only layer, and Close removes it.
//   - It is laid only when that run's sentinels all came out right on the
//     base, but for what the calibration (calibrate.go) found the base gets
//     wrong whatever the patch — a run whose own tests came out as at the
//     baseline; else there is none, and patched runs compile as before.
//   - Sentinel names (and the must-fail tests' values) are fresh for each
//     Judger (a race, a judge command) rather than for each judged copy.
//     A judged run can read its own sentinels' names whatever they are
//     (they are in its test binary), so what per-copy names kept from it
//     is what another run could tell it. A judged run has no open channel
//     to anyone — what it writes is thrown away, what it prints goes to
//     the judge — but an agent of the same race that is still working
//     (a later one, under --parallel) shares the machine with it, and a
//     covert channel (free disk space, load, page-cache timing) could
//     carry the names across; docs/JUDGE.md lists that under what is not
//     defended.
//   - Each patched run still plants the sentinels (the same files) and
//     the -exec wrapper still removes their sources before a test binary
//     runs; only the compiler's output is reused.

// warmCache is a Judger's warmed layer: made by one run in the background,
// ready once that run has ended well, removed by close.
type warmCache struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	dir    string
	lock   *os.File // flocked while the layer may be used (removeStaleWarm)

	mu     sync.Mutex
	ready  string // the layer, once it is in place
	note   string // why there is none, when there is none
	closed bool
	users  sync.WaitGroup // judged runs that lay the layer; close waits for them
}

// use is the warmed layer, or "" while there is none, and the func to
// call once the run that lays it has ended: close never removes a layer a
// run still has mounted.
func (w *warmCache) use() (string, func()) {
	if w == nil {
		return "", func() {}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ready == "" || w.closed {
		return "", func() {}
	}
	w.users.Add(1)
	return w.ready, w.users.Done
}

func (w *warmCache) none(why string) {
	w.mu.Lock()
	w.note = why
	w.mu.Unlock()
}

// warmNice is how many steps the warming run's group is lowered while a
// judged run is running (Options.yield): a verdict goes first.
const warmNice = 10

// warmDirPrefix names a warmed layer's folder in the cache folder
// (warm-PID-RANDOM); its warmLock file is flocked by the Judger that owns
// it as long as the layer may be used, so a folder whose lock can be
// taken was left by a judge that is gone, whichever machine or PID
// namespace it ran in.
const (
	warmDirPrefix = "warm-"
	warmLock      = "lock"
)

// startWarm starts warming j's Go build cache in the background, when
// there is something to warm: a kept baseline layer and Go sentinels.
func startWarm(ctx context.Context, j *Judger) *warmCache {
	w := &warmCache{done: make(chan struct{})}
	switch {
	case j.o.goLayer == "":
		w.note = "no kept build cache to warm (no cache folder, no Go build cache, or nothing built at the baseline)"
	case j.plan == nil || j.plan.runner != "go" || len(j.plan.list) == 0:
		w.note = "no Go sentinels to compile ahead"
	}
	if w.note != "" {
		close(w.done)
		return w
	}
	removeStaleWarm(j.o.CacheDir)
	dir, err := os.MkdirTemp(j.o.CacheDir, fmt.Sprintf("%s%d-*", warmDirPrefix, os.Getpid()))
	if err != nil {
		w.note = "no folder for it: " + err.Error()
		close(w.done)
		return w
	}
	w.dir = dir
	if w.lock, err = lockWarm(dir, false); err != nil {
		sandbox.RemoveAll(dir)
		w.dir, w.note = "", "no lock for it: "+err.Error()
		close(w.done)
		return w
	}
	wctx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	go func() {
		defer close(w.done)
		w.warm(wctx, j)
	}()
	return w
}

// warm runs the test command on the base with j's sentinels, keeping its
// writes to GOCACHE in w.dir, on a slot of the judge's like any judged run.
func (w *warmCache) warm(ctx context.Context, j *Judger) {
	release, err := j.o.Slots.acquire(ctx)
	if err != nil {
		w.none("stopped before it ran")
		return
	}
	defer release()
	fork, cleanup, err := newFork(ctx, j.o.Store, j.pid1)
	if err != nil {
		w.none(err.Error())
		return
	}
	defer cleanup()
	o := j.o
	o.goKeep, o.yield = w.dir, &j.testing
	run, err := runTests(ctx, o, fork, j.runCmd, nil, j.plan)
	switch {
	case err != nil:
		w.none(err.Error())
		return
	case ctx.Err() != nil:
		w.none("stopped before it ended")
		return
	case run.timedOut || run.limit != "":
		w.none("the run on the base did not end within its limits")
		return
	}
	// a run of the base with the sentinels, so the judge's calibration
	// (calibrate.go): what it gets wrong that way is no reason to lay no layer
	cr := j.calibrated(run)
	j.cal.offer(cr)
	if sc := checkSentinelRuns(j.plan, run.results, run.exit, run.sentinels, &cr.base); sc.tamper != "" {
		w.none("the base's own run got a sentinel wrong: " + sc.tamper)
		return
	}
	sandbox.RemoveAll(filepath.Join(w.dir, "work")) // overlayfs's, of no use unmounted
	up := filepath.Join(w.dir, "upper")
	if entries, err := os.ReadDir(up); err != nil || len(entries) == 0 {
		w.none("the run on the base compiled nothing")
		return
	}
	w.mu.Lock()
	w.ready = up
	w.mu.Unlock()
}

// close stops the warming run, if it still runs, and removes the layer.
func (w *warmCache) close() {
	if w == nil {
		return
	}
	w.once.Do(func() {
		if w.cancel != nil {
			w.cancel()
		}
		<-w.done
		w.mu.Lock()
		w.closed = true
		w.ready = ""
		if w.note == "" {
			w.note = "closed"
		}
		w.mu.Unlock()
		w.users.Wait()
		if w.dir != "" {
			sandbox.RemoveAll(w.dir)
		}
		if w.lock != nil {
			w.lock.Close()
		}
	})
}

// lockWarm takes the lock of the warmed layer's folder dir: made and held
// (the owner), or, with stale, taken only if nobody holds it.
func lockWarm(dir string, stale bool) (*os.File, error) {
	flag, how := os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, unix.LOCK_EX|unix.LOCK_NB
	if stale {
		flag &^= os.O_CREATE // a folder whose owner has not made its lock yet is not stale
	}
	f, err := os.OpenFile(filepath.Join(dir, warmLock), flag, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// removeStaleWarm removes the warmed layers whose judge is gone (killed
// before its Close): those whose lock nobody holds.
func removeStaleWarm(cacheDir string) {
	entries, _ := os.ReadDir(cacheDir)
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), warmDirPrefix) {
			continue
		}
		d := filepath.Join(cacheDir, e.Name())
		if f, err := lockWarm(d, true); err == nil {
			sandbox.RemoveAll(d)
			f.Close()
		}
	}
}

// WaitWarm waits until the warmed build cache (Options.Warm) is ready or
// will not be, or ctx ends, and says whether it is laid under the patched
// runs from now on, and if not why. For a caller that would rather judge
// with it than soon: a benchmark, a test.
func (j *Judger) WaitWarm(ctx context.Context) (bool, string) {
	if j.warm == nil {
		return false, "Options.Warm is off"
	}
	select {
	case <-j.warm.done:
	case <-ctx.Done():
		return false, ctx.Err().Error()
	}
	j.warm.mu.Lock()
	defer j.warm.mu.Unlock()
	return j.warm.ready != "", j.warm.note
}

// Close stops what the Judger still does in the background, removes its
// warmed build cache and lets go of its base's pid 1 (which 'workspace
// prune --bases' leaves alone while a Judger holds it). Call it once its
// last Judge call has returned.
func (j *Judger) Close() {
	j.warm.close()
	if j.release != nil {
		j.release()
	}
}
