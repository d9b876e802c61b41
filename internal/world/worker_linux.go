package world

import (
	"os"
	"syscall"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// selfExe is this binary as the kernel knows it, even when its file was replaced since.
func selfExe() (string, error) { return "/proc/self/exe", nil }

// workerAttr: a process group of its own (a terminal's ^C is forkbomb's to handle, and it
// kills the worker), and death with forkbomb.
func workerAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// confineWorker confines this process for good (internal/sandbox.ConfineWorker), from a
// folder that names nothing of forkbomb's.
func confineWorker(data int64) error {
	if err := os.Chdir("/"); err != nil {
		return err
	}
	_, err := sandbox.ConfineWorker(sandbox.WorkerLimits{Data: data})
	return err
}
