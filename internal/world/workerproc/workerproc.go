// Package workerproc finds, checks and starts the world's worker process (internal/world
// says what the worker does and how it is confined): the slim forkbomb-world beside forkbomb,
// opened and checked as the sandbox's init is, or any program given, started with nothing of
// forkbomb's environment. Its sources are embedded in the world's fingerprint with the world's.
package workerproc

import (
	"os"
	"strconv"
)

// Arg, os.Args[1], makes a binary that links worlds serve as the world's worker.
const Arg = "forkbomb-world-worker"

// Name is the slim worker's file name beside forkbomb (cmd/forkbomb-world), and every
// worker's argv[0].
const Name = "forkbomb-world"

// Proc is a started worker: its process and the parent's ends of its stdin, stdout and
// stderr.
type Proc struct {
	Process *os.Process
	Stdin   *os.File
	Stdout  *os.File
	Stderr  *os.File
}

// Start starts the program at exe as a worker: argv Name, Arg; in "/"; with nothing of
// forkbomb's environment (its keys least of all). USER and HOME are constants for os/user:
// test -O and -G ask it for the current user, and without cgo it answers from these when the
// host's passwd file cannot be read — which, in a worker, it cannot. (Asking before the
// worker confines itself is no answer: glibc's lookup, in a cgo build, then found ~root after
// it, TestWorkerKernelLayer.)
// GOMAXPROCS=1: one scheduler thread, so the worker starts fewer threads and its confinement
// (once per thread) signals fewer; the world's commands need no more.
func Start(exe string) (*Proc, error) {
	var ends [6]*os.File // the child's stdin, stdout, stderr; then the parent's
	closeAll := func() {
		for _, f := range ends {
			if f != nil {
				f.Close()
			}
		}
	}
	for i := range 3 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll()
			return nil, err
		}
		if i == 0 {
			ends[0], ends[3] = r, w
		} else {
			ends[i], ends[3+i] = w, r
		}
	}
	p, err := os.StartProcess(exe, []string{Name, Arg}, &os.ProcAttr{
		Dir:   "/",
		Env:   []string{"USER=world", "HOME=/work", "GOMAXPROCS=1"},
		Files: ends[:3],
		Sys:   procAttr(),
	})
	for _, f := range ends[:3] {
		f.Close()
	}
	if err != nil {
		for _, f := range ends[3:] {
			f.Close()
		}
		return nil, err
	}
	return &Proc{Process: p, Stdin: ends[3], Stdout: ends[4], Stderr: ends[5]}, nil
}

// Slim is the slim worker: the file named Name beside the running executable, opened and
// checked once per process as the sandbox's init is (progfile.Open).
type Slim struct {
	Path string
	// File is the checked file, held open (O_PATH) for the life of the process; nil when it
	// is missing or refused.
	File *os.File
	// Err is why it was not opened: fs.ErrNotExist when there is none (go run, test
	// binaries), else a refusal.
	Err error
}

// Exe is the path that executes s's checked file: its descriptor, so the file checked is the
// file run whatever is at s.Path by then. The descriptor is close-on-exec: it is open while
// the child resolves the path, and closed once the worker runs.
func (s *Slim) Exe() string { return "/proc/self/fd/" + strconv.Itoa(int(s.File.Fd())) }
