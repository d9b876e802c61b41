//go:build !linux

package world

import "os"

func selfExe() (string, error) { return os.Executable() }

// confineWorker: only Linux confines the worker by the kernel; elsewhere it is a process of its
// own (a panic or a runaway command ends it, not forkbomb) whose host access is kept off by
// the world's hooks alone (docs/SECURITY.md).
func confineWorker(int64) error { return os.Chdir("/") }
