package full

import (
	"bytes"
	"context"
	"os"
	"strings"
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

// forkbomb runs the CLI in-process; the MCP server it starts in the sandbox is this test
// binary re-executed as "forkbomb" (TestMain).
func forkbomb(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), args, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb}, Options())
	return out.String(), errb.String(), code
}
