package tunnel

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// notDumpable keeps the fork's processes (the same user) out of the
// forwarder's /proc entries and descriptors.
func notDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("forwarder: prctl(PR_SET_DUMPABLE): %w", err)
	}
	return nil
}
