//go:build !linux

package run

import "os"

// Plain lines where forkbomb does not run races (it needs Linux).
func isTerminal(*os.File) bool { return false }
