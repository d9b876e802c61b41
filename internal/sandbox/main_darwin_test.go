package sandbox_test

import (
	"os"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// TestMain lets the test binary serve as the sandbox's init (on macOS
// forkbomb itself is, run by sandbox-exec inside the profile) and as the
// attacker program run inside the sandbox.
func TestMain(m *testing.M) {
	if sandbox.IsInit() {
		sandbox.InitMain()
	}
	if len(os.Args) > 1 && os.Args[1] == attackArg {
		os.Exit(attackMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}
