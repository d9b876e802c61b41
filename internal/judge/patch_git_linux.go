package judge

import "syscall"

// helperProcAttr makes a helper the judge starts on the trusted side (git
// reading a patch) die with forkbomb: the kernel sends it SIGKILL when the
// thread that started it exits, which covers a kill -9 of forkbomb.
func helperProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
