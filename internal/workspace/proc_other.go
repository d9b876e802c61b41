//go:build !linux

package workspace

import "syscall"

// procAttr: without a parent-death signal, helpers are bounded by their
// context and WaitDelay only.
func procAttr() *syscall.SysProcAttr { return nil }
