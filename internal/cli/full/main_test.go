package full

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/forkbomb/forkbomb/internal/cli"
	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// TestMain: world drive's MCP server is this test binary re-executed as
// "forkbomb" (a link of that name), in a sandbox whose init is the binary
// re-executed too.
func TestMain(m *testing.M) {
	if sandbox.IsInit() {
		sandbox.InitMain()
	}
	testscript.Main(m, map[string]func(){"forkbomb": func() { os.Exit(cli.Main(Options())) }})
}
