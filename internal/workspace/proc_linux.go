package workspace

import "syscall"

// procAttr makes a helper process die with forkbomb: the kernel sends it
// SIGKILL when the thread that started it exits, which covers a kill -9
// of forkbomb that no deferred cleanup can.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// snapshotOverlay: a command in a pid 1 writes a throwaway overlay layer.
const snapshotOverlay = true
