package cli_test

import (
	"os"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// noExitSleep gives every forkbomb a script runs the race detector's
// options with its exit-time sleep off. A -race test binary that exits
// while other goroutines live sleeps atexit_sleep_ms (1000 by default)
// first; forkbomb always has some (signal handling, the record's queue),
// so under -race each of the scripts' ~190 commands took a second longer
// than a user's. A binary without the race detector ignores GORACE.
func noExitSleep(env *testscript.Env) {
	env.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
}
