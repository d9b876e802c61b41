package workerproc

import "sync"

// A `forkbomb world exec` — one process per exec, the form a shell script or an agent's tool
// call runs again and again — spends most of its time starting two Go programs: forkbomb and
// its worker. The worker's start need not wait for forkbomb's: this package's init, early in
// forkbomb's own (its imports are few), starts the slim worker when the command line asks for
// an exec, and the Runner's first start takes that process instead of starting one, so the
// worker's runtime start runs on another core beside the rest of forkbomb's. Nothing changes in
// what the worker is or how it is trusted: it is the same checked file, started the same way,
// and it reads nothing — it waits on its stdin for the header, whose fingerprint it checks
// before it confines itself, then its hello. A command line that fails before its exec leaves
// it waiting; it dies with forkbomb (Pdeathsig, and its stdin's end).

var prestarted struct {
	sync.Mutex
	slim *Slim
	proc *Proc
}

// TakePrestarted hands over the worker started at init from s, once; nil when there is none
// (any other command line, no usable slim worker, or it was taken).
func TakePrestarted(s *Slim) *Proc {
	prestarted.Lock()
	defer prestarted.Unlock()
	if prestarted.proc == nil || prestarted.slim != s {
		return nil
	}
	p := prestarted.proc
	prestarted.proc = nil
	return p
}
