package workerproc

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/forkbomb/forkbomb/internal/sandbox/progfile"
)

// procAttr: a process group of its own (a terminal's ^C is forkbomb's to handle, and it kills
// the worker), and death with forkbomb.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// SlimWorker is the slim worker, looked at once per process.
var SlimWorker = sync.OnceValue(func() *Slim {
	exe, err := os.Executable()
	if err != nil {
		return &Slim{Err: err}
	}
	s := &Slim{Path: filepath.Join(filepath.Dir(exe), Name)}
	s.File, s.Err = progfile.Open(s.Path)
	return s
})
