package worldrace

import (
	"os"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// TestMain lets the test binary serve as the sandbox's init (sandbox.Run re-executes it).
func TestMain(m *testing.M) {
	if sandbox.IsInit() {
		sandbox.InitMain()
	}
	os.Exit(m.Run())
}
