package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// pidsWatch ends a command whose processes reached its --pids limit. The
// kernel already refuses the fork past the limit; but a fork bomb held at
// the limit keeps spinning (and the CPUs busy) until its timeout, and its
// caller cannot tell that from any other failure. The watch kills it at
// once and Result.Limit says "pids".
//
// With a cgroup the kernel counts the refused forks (pids.events "max").
// Without one, in a pid namespace, RLIMIT_NPROC bounds the sandbox's tasks
// and the watch counts them — the tasks of every process in the init's pid
// namespace — acting when they reach the bound. That count is sampled, so
// a bomb that reaches the bound and falls back between samples can be
// missed; the kernel's bound holds either way.
type pidsWatch struct {
	hit   atomic.Bool
	check func() bool
	stop  chan struct{}
	wg    sync.WaitGroup
}

const (
	pidsEventsEvery = 100 * time.Millisecond
	pidsScanEvery   = 200 * time.Millisecond
)

// watchPids starts the watch for one command; onHit kills it. With a
// cgroup it looks for a fork refused since the command started (the
// cgroup's count was base then); without one, in the pid namespace ns
// (initProc.pidsNS), for the sandbox's tasks at the bound. It returns nil
// when there is nothing to watch: no --pids, or neither.
func watchPids(cg *cgroup, ns string, pids int, base int64, onHit func()) *pidsWatch {
	if pids <= 0 {
		return nil
	}
	if file := cg.pidsEvents(); file != "" {
		return startPidsWatch(func() bool { return counter(file, "max") > base }, pidsEventsEvery, onHit)
	}
	if ns != "" {
		return startPidsWatch(func() bool { return tasksInPidNS(ns) >= pids }, pidsScanEvery, onHit)
	}
	return nil
}

// startPidsWatch calls check every period until it says the limit is
// reached, then onHit, once.
func startPidsWatch(check func() bool, every time.Duration, onHit func()) *pidsWatch {
	w := &pidsWatch{stop: make(chan struct{}), check: check}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				if check() {
					w.hit.Store(true)
					onHit()
					return
				}
			}
		}
	}()
	return w
}

// end stops the watch and reports whether the limit was reached: it
// killed the command, or (looked at once more, for a command that gave up
// between two looks) the kernel refused one of its forks.
func (w *pidsWatch) end() bool {
	if w == nil {
		return false
	}
	close(w.stop)
	w.wg.Wait()
	return w.hit.Load() || w.check()
}

// pidsEvents is the cgroup's pids.events file, or "" without a pids
// controller.
func (cg *cgroup) pidsEvents() string {
	if cg == nil {
		return ""
	}
	if cg.v2 != "" {
		return filepath.Join(cg.v2, "pids.events")
	}
	if d, ok := cg.v1["pids"]; ok {
		return filepath.Join(d, "pids.events")
	}
	return ""
}

// tasksInPidNS counts the threads of every process in the pid namespace
// whose /proc/PID/ns/pid link reads ns. It reads only this machine's /proc
// (kernel data, not anything the command made).
func tasksInPidNS(ns string) int {
	d, err := os.Open("/proc")
	if err != nil {
		return 0
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	n := 0
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		if l, err := os.Readlink("/proc/" + name + "/ns/pid"); err != nil || l != ns {
			continue
		}
		n += threadsOf(name)
	}
	return n
}

// threadsOf reads num_threads, field 20 of /proc/PID/stat (the command
// name, field 2, may hold spaces and parentheses: count from the last ')').
func threadsOf(pid string) int {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 1
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 18 {
		return 1
	}
	t, err := strconv.Atoi(f[17])
	if err != nil || t < 1 {
		return 1
	}
	return t
}
