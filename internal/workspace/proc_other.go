//go:build !linux

package workspace

import "syscall"

// procAttr: without a parent-death signal, helpers are bounded by their
// context and WaitDelay only.
func procAttr() *syscall.SysProcAttr { return nil }

// snapshotOverlay: without overlayfs a command in a pid 1 works on a
// throwaway copy of it (a clone where the filesystem shares blocks).
const snapshotOverlay = false
