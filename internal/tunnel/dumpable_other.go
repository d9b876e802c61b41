//go:build !linux

package tunnel

import (
	"fmt"
	"runtime"
)

// notDumpable: the forwarder runs in Linux pods only; elsewhere it refuses
// rather than run without the protection.
func notDumpable() error {
	return fmt.Errorf("forwarder: runs in Linux pods only, not on %s", runtime.GOOS)
}
