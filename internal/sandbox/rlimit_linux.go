package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// setRlimits sets the limits every command gets (no core dumps, no raised
// CPU priority) and, where
// no cgroup could be made, the rlimit stand-ins for --memory and --pids.
// RLIMIT_NPROC counts per user namespace, so in namespace mode it bounds the
// sandbox's own processes; without namespaces it counts all of the user's.
func setRlimits(cfg *initConfig) error {
	set := func(res int, v uint64) error {
		return unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: v})
	}
	if err := set(unix.RLIMIT_CORE, 0); err != nil {
		return fmt.Errorf("RLIMIT_CORE: %w", err)
	}
	// No command raises its CPU priority above the one it started with
	// (Policy.Nice): without CAP_SYS_NICE, RLIMIT_NICE is what would allow it.
	if err := set(unix.RLIMIT_NICE, 0); err != nil {
		return fmt.Errorf("RLIMIT_NICE: %w", err)
	}
	if cfg.RlimitData > 0 {
		if err := set(unix.RLIMIT_DATA, uint64(cfg.RlimitData)); err != nil {
			return fmt.Errorf("RLIMIT_DATA: %w", err)
		}
	}
	if cfg.RlimitProc > 0 {
		if err := set(unix.RLIMIT_NPROC, uint64(cfg.RlimitProc)); err != nil {
			return fmt.Errorf("RLIMIT_NPROC: %w", err)
		}
	}
	return nil
}
