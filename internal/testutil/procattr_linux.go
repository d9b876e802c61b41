package testutil

import "syscall"

// DieWithTest is the process attributes of a helper a test starts (a
// server, a control plane): the kernel kills it when the test binary's
// thread that started it exits, even a test binary killed with SIGKILL.
func DieWithTest() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
