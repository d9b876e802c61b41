package world

import (
	"errors"
	"io/fs"
	"sync"

	"github.com/forkbomb/forkbomb/internal/world/workerproc"
)

// slimWorker is forkbomb-world beside the running executable, opened and checked as the
// sandbox's init is (workerproc.SlimWorker: not through a symbolic link; a regular executable
// file, not set-id, writable by its owner alone, owned by root or the caller); nil when there
// is none (go run, test binaries: no warning).
var slimWorker = sync.OnceValue(func() *workerBin {
	s := workerproc.SlimWorker()
	if s.Path == "" || errors.Is(s.Err, fs.ErrNotExist) {
		return nil
	}
	b := &workerBin{slim: s}
	if s.Err != nil {
		b.refuse(s.Err.Error())
	} else {
		go fingerprint() // needed at the first start, a few steps on
	}
	return b
})
