package world

import (
	"errors"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// slimWorker is forkbomb-world beside the running executable, opened and checked as the
// sandbox's init is (sandbox.OpenProgram: not through a symbolic link; a regular executable
// file, not set-id, writable by its owner alone, owned by root or the caller); nil when there
// is none (go run, test binaries: no warning).
var slimWorker = sync.OnceValue(func() *workerBin {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	b := &workerBin{path: filepath.Join(filepath.Dir(exe), WorkerName)}
	f, err := sandbox.OpenProgram(b.path)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil
	case err != nil:
		b.refuse(err.Error())
	default:
		b.file = f
		go fingerprint() // needed at the first start, a few steps on
	}
	return b
})
