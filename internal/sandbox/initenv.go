package sandbox

import (
	"os"
	"strings"
)

// initEnv is the environment the init itself starts with: the command's
// (the init hands the command cfg.Env from its config, never its own
// environment), plus — only in a binary built with the race detector,
// which is a test binary, never a release — the caller's race detector
// options with the exit-time sleep turned off.
//
// The race detector sleeps atexit_sleep_ms (1000 by default) in a
// process that exits while other goroutines live, so that they may
// still report. The init always exits so, after its command has ended:
// in a -race test binary every confined command, and the two of every
// Probe, took a second longer than it does for a user, and most of the
// race run's time went there. Races in the init are still detected and
// reported as they happen.
func initEnv(cmdEnv []string) []string {
	if !raceBuild {
		return cmdEnv
	}
	opts := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	return append(cmdEnv[:len(cmdEnv):len(cmdEnv)], "GORACE="+opts)
}
