//go:build !linux

package judge

import "syscall"

// helperProcAttr: without a parent-death signal, helpers are bounded by
// their context and WaitDelay only.
func helperProcAttr() *syscall.SysProcAttr { return nil }
