package canary_test

import (
	"os"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

func TestMain(m *testing.M) {
	if sandbox.IsInit() {
		sandbox.InitMain()
	}
	os.Exit(m.Run())
}
