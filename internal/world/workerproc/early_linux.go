package workerproc

import (
	"os"
	"sync/atomic"
)

// A `forkbomb world exec` needs a worker at once, and forkbomb's own start — its Go runtime and
// its packages' initialisers, before main runs — takes longer than the worker's. So the
// command line is looked at here, in this package's initialiser, which runs early (package
// doc): when it asks for a world exec and the slim worker is there and passes its checks, the
// worker is started now and Claim hands it to the first Runner that starts one. The worker
// runs nothing before it has read the trusted side's header (internal/world: the build's
// fingerprint, its limits) and said hello, so a worker started for nothing — the command line
// was a mistake, or --help — only ends when forkbomb does (it reads the end of its stdin, and
// dies with forkbomb in any case).

var early atomic.Pointer[Proc]

func init() {
	if !worldExec(os.Args) {
		return
	}
	s := SlimWorker()
	if s.File == nil {
		return // the Runner reports it, or uses this binary
	}
	if p, err := Start(s.Exe()); err == nil {
		early.Store(p)
	}
}

// worldExec reports whether args are forkbomb's and ask for `world exec` (and not its help).
// A miss costs only the overlap: the Runner then starts its worker itself.
func worldExec(args []string) bool {
	if len(args) < 4 || args[1] != "world" || args[2] != "exec" {
		return false
	}
	for _, a := range args[3:] {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" || a == "-help" {
			return false
		}
	}
	return true
}

// Claim returns the worker started at init, once; nil when none was.
func Claim() *Proc { return early.Swap(nil) }
