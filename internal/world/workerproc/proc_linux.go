package workerproc

import (
	"os"
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
	s := &Slim{Path: besideExe(exe, Name)}
	s.File, s.Err = progfile.Open(s.Path)
	return s
})

// besideExe is the file name beside the executable exe (an absolute path), by hand: path/filepath
// and strings are initialised late in a program's start, and this package early (prestart.go).
func besideExe(exe, name string) string {
	i := len(exe)
	for i > 0 && exe[i-1] != '/' {
		i--
	}
	return exe[:i] + name
}
