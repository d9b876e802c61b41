package sandbox_test

import (
	"os"
	"testing"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// TestMain lets the test binary serve as the sandbox init (where no slim
// init is given: Run re-executes /proc/self/exe), as the attacker program
// run inside the sandbox, and as a forkbomb process of its own for
// TestInitSelection; it removes the slim init built for the tests.
func TestMain(m *testing.M) {
	if sandbox.IsInit() {
		sandbox.InitMain()
	}
	if len(os.Args) > 1 && os.Args[1] == attackArg {
		os.Exit(attackMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == initRunsArg {
		os.Exit(initRunsMain(os.Args[2:]))
	}
	code := m.Run()
	if slimInit.dir != "" {
		os.RemoveAll(slimInit.dir)
	}
	os.Exit(code)
}
