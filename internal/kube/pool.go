package kube

// Warm pods: a run's pods started with the run, before its forks ask for
// them. Store.New starts Options.Warm pods beside the pid 1's snapshot,
// sends each the tree and forkbomb's binary as soon as it runs, and a
// fork's first command claims one that holds the limits it asks for;
// a fork that finds none free (or none with its limits) starts its own,
// as without a pool. A warm pod never served another fork: each is
// claimed once, by one fork, and deleted with it. Those left unclaimed
// are deleted with the run (their anchor) — or, with Options.KeepWarm,
// the run's end leaves pods for the next run, which its warm pods claim
// before making their own (kept.go). With a tree image
// (Options.Registry) a warm pod is made once the image is pushed: it
// holds the tree from its start, and is sent nothing.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// warmPod is one pod of a run's pool.
type warmPod struct {
	mu           sync.Mutex
	obj          string // name (its pod's name may change once: warm)
	memory       int64
	cpus         float64
	done         chan struct{} // closed when mode or err is set
	mode         sandbox.Mode
	scoped       bool
	err          error
	snapshotWait chan struct{} // the pid 1's tree exists
	// abandoned: the fork that claimed it gave up waiting (claim): the
	// pod is deleted, whichever of claim and warm comes second
	abandoned atomic.Bool
}

// startPool starts the run's warm pods; each waits for tree (closed once
// the pid 1 exists) before it is sent its tree. The pods are offered on
// the run's pool at once, before any is made: a fork's first command
// that comes before its pod runs waits for it (claim) rather than missing
// it — and starting one more pod, for memory the warm ones hold.
func (s *Store) startPool(ctx context.Context, run string, rs *runState, tree chan struct{}) {
	n := s.o.Warm
	rs.pool = make(chan *warmPod, n)
	for i := 0; i < n; i++ {
		wp := &warmPod{obj: objectName("fb-", fmt.Sprintf("%s-w%d", run, i)), memory: s.o.WarmMemory, cpus: s.o.WarmCPUs,
			done: make(chan struct{}), snapshotWait: tree}
		rs.pool <- wp
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.warm(ctx, run, rs, wp)
		}()
	}
}

// warm claims a kept pod of the run's kind (Options.KeepWarm, kept.go)
// or creates one warm pod, and loads it. A pod of a tree image is claimed
// or created once the image is pushed (it names it).
func (s *Store) warm(ctx context.Context, run string, rs *runState, wp *warmPod) {
	defer close(wp.done)
	if s.o.Registry != "" {
		select {
		case <-wp.snapshotWait:
		case <-ctx.Done():
			wp.err = ctx.Err()
			return
		}
	}
	po := s.warmOptions(rs)
	po.Name, po.Run, po.Owner = wp.name(), run, rs.anchor
	po.DeadlineSeconds = int64(s.o.Deadline / time.Second)
	var sandboxUID types.UID // where forks are Sandboxes: the warm pod's, made by agent-sandbox's controller
	var err error
	kept, keptUID := s.claimKeptIf(ctx, run, rs, po)
	if kept != "" {
		wp.setName(kept)
	} else if sandboxUID, err = s.makePod(ctx, po); err != nil {
		wp.err = err // the fork that claims it starts its own
		return
	}
	// its fork gave up on it before it was made (claim); the name claim
	// read is this one, or claim's delete came first and this sees it
	if wp.abandoned.Load() {
		s.deleteFork(context.WithoutCancel(ctx), wp.name())
		wp.err = errors.New("abandoned")
		return
	}
	po.Name = wp.name() // a kept pod's, once claimed
	var node string
	if kept != "" { // checked as claimed: kept.go, kept_sandbox.go
		node, err = s.waitRunning(ctx, kept, keptUID)
	} else {
		node, err = s.waitOurs(ctx, po, sandboxUID)
	}
	if err != nil {
		wp.err = err
		return
	}
	select {
	case <-wp.snapshotWait:
	case <-ctx.Done():
		wp.err = ctx.Err()
		return
	}
	if err := s.recheckKept(ctx, wp.name()); err != nil {
		wp.err = err
		return
	}
	wp.mode, wp.scoped, wp.err = s.sendTree(ctx, &forkState{pid1: run, obj: wp.name(), image: rs.image.Ref}, node)
}

// claimKeptIf is claimKept, or claimKeptSandbox where forks are
// Sandboxes (its Sandbox's uid too), when kept pods are asked for (never
// of a tree image: Store.Remove).
func (s *Store) claimKeptIf(ctx context.Context, run string, rs *runState, po PodOptions) (string, types.UID) {
	switch {
	case s.o.KeepWarm <= 0 || po.TreeInImage || s.crd && !s.pools:
		return "", ""
	case s.crd:
		return s.claimKeptSandbox(ctx, run, rs, po)
	}
	return s.claimKept(ctx, run, rs, po), ""
}

// name is the warm pod's name: the run's own, or a kept pod's once
// claimed (warm).
func (wp *warmPod) name() string {
	wp.mu.Lock()
	defer wp.mu.Unlock()
	return wp.obj
}

func (wp *warmPod) setName(obj string) {
	wp.mu.Lock()
	wp.obj = obj
	wp.mu.Unlock()
}

// claim takes a warm pod of the fork's run holding the limits the fork's
// first command asks for, waiting for it to be loaded; nil when there is
// none (then the fork starts a pod of its own). A pod whose start failed
// is deleted and the next one tried.
func (s *Store) claim(ctx context.Context, fs *forkState, p sandbox.Policy) *warmPod {
	s.mu.Lock()
	rs := s.runs[fs.pid1]
	s.mu.Unlock()
	if rs == nil || rs.pool == nil {
		return nil
	}
	for {
		var wp *warmPod
		select {
		case wp = <-rs.pool:
		default:
			return nil
		}
		if wp.memory != p.Memory || wp.cpus != p.CPUs {
			rs.pool <- wp // not this fork's limits: left for another (never blocks: one out, one back)
			return nil
		}
		select {
		case <-wp.done:
		case <-ctx.Done():
			// given up while it is made: deleted now, or by warm once made
			wp.abandoned.Store(true)
			s.deleteFork(context.WithoutCancel(ctx), wp.name())
			return nil
		}
		if wp.err == nil {
			return wp
		}
		s.deleteFork(context.WithoutCancel(ctx), wp.name())
	}
}
