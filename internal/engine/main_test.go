package engine

import (
	"os"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// TestMain lets the test binary serve as the sandbox init, for the engines
// whose agents run confined in these tests (claude-code).
func TestMain(m *testing.M) {
	if sandbox.IsInit() {
		sandbox.InitMain()
	}
	os.Exit(m.Run())
}
