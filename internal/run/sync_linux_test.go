package run_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/record"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// The race's tests synchronise with its agents through readiness signals,
// never by sleeping and hoping: an agent says it runs by writing a file in
// its fork, and an agent that must wait for the others waits for a gate
// file the test opens when the record shows what it waits for.

// waitStarted waits until n forks of the store at root hold the file
// startedAgent writes: in their upper layer (overlay forks) or their tree
// (reflink or copied forks). It reports how many did, and may be called
// from any goroutine.
func waitStarted(root string, n int) (started int) {
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		upper, _ := filepath.Glob(filepath.Join(root, "*", "upper", "started"))
		tree, _ := filepath.Glob(filepath.Join(root, "*", "tree", "started"))
		if started = len(upper) + len(tree); started >= n || time.Now().After(deadline) {
			return started
		}
	}
}

// gate is a file an agent waits for (gate.wait in its script) and the test
// creates (gate.open). It lives outside every folder the sandbox masks, so
// a fork sees it appear; where no such folder is writable the agent's wait
// ends at its deadline instead, as a sleep would.
type gate struct{ path string }

func newGate(t *testing.T) gate {
	dir, unmasked := testutil.OutsideDir(t)
	if !unmasked {
		t.Log("no unmasked folder for the gate: agents wait for its deadline (10 s) instead")
	}
	return gate{filepath.Join(dir, "open")}
}

// wait is the shell that waits (at most 10 s) for the gate to open.
func (g gate) wait() string {
	return `i=0; while [ ! -e '` + g.path + `' ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done`
}

func (g gate) open(t *testing.T) {
	if err := os.WriteFile(g.path, nil, 0o644); err != nil {
		t.Error(err)
	}
}

// openWhen opens g once cond holds (or after two minutes, leaving the
// test's own checks to say what went wrong). The returned function waits
// for it.
func (g gate) openWhen(t *testing.T, cond func() bool) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer g.open(t)
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if cond() {
				return
			}
		}
	}()
	return func() { <-done }
}

// inFork reports whether a fork of the store at root whose name ends in
// suffix holds the file rel, in its upper layer or its tree.
func inFork(root, suffix, rel string) func() bool {
	return func() bool {
		upper, _ := filepath.Glob(filepath.Join(root, "*"+suffix, "upper", rel))
		tree, _ := filepath.Glob(filepath.Join(root, "*"+suffix, "tree", rel))
		return len(upper)+len(tree) > 0
	}
}

// recorded reports whether events.jsonl of a run under runs holds, for
// each fork in want, an event of that type.
func recorded(runs string, want map[int]event.Kind) func() bool {
	return func() bool {
		files, _ := filepath.Glob(filepath.Join(runs, "*", "events.jsonl"))
		for _, file := range files {
			if eventsOf(file, want) {
				return true
			}
		}
		return false
	}
}

func eventsOf(file string, want map[int]event.Kind) bool {
	f, err := os.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	got := map[int]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev record.Event
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Fork != nil && want[*ev.Fork] == ev.Type {
			got[*ev.Fork] = true
		}
	}
	return len(got) == len(want)
}
