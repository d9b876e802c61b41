package workerproc

import (
	"os"
	"strings"
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
	// The folder by hand: path/filepath would order this package's initialisation after
	// the heavy ones' (package doc).
	s := &Slim{Path: exe[:strings.LastIndexByte(exe, '/')+1] + Name}
	s.File, s.Err = progfile.Open(s.Path)
	return s
})
