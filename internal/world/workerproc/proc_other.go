//go:build !linux

package workerproc

import "syscall"

// procAttr: a process group of its own (a terminal's ^C is forkbomb's to handle).
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
