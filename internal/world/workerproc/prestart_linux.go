package workerproc

import "os"

// The prestart (prestart.go) of a `forkbomb world exec`; only Linux has a slim worker.
func init() {
	if len(os.Args) > 2 && os.Args[1] == "world" && os.Args[2] == "exec" {
		prestart(SlimWorker())
	}
}

// prestart starts the slim worker s now, when it is usable.
func prestart(s *Slim) {
	if s.File == nil || s.Err != nil {
		return
	}
	p, err := Start(s.Exe())
	if err != nil {
		return // the Runner's own start tries again, and says why
	}
	prestarted.Lock()
	prestarted.slim, prestarted.proc = s, p
	prestarted.Unlock()
}
