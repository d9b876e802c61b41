package mine_test

import (
	"os"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// TestMain lets the test binary serve as the sandbox init.
func TestMain(m *testing.M) {
	if sandbox.IsInit() {
		sandbox.InitMain()
	}
	os.Exit(m.Run())
}
