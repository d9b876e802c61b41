//go:build !linux

package testutil

import "syscall"

// DieWithTest: only Linux has a parent-death signal; elsewhere a helper is
// ended by the test's own cleanup, and outlives a test binary killed with
// SIGKILL.
func DieWithTest() *syscall.SysProcAttr { return nil }
