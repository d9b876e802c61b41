// The MCP server (internal/world/worldmcp) is tested here, an external test of package world,
// so that its worker is this test binary with the test-only commands of export_test.go.
package world_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/forkbomb/forkbomb/internal/world"
	"github.com/forkbomb/forkbomb/internal/world/worldmcp"
)

// serveEnv makes the test binary an MCP server on its stdin and stdout: the client below
// starts it as a real process, so the test speaks MCP over real stdio.
const serveEnv = "FORKBOMB_WORLD_TEST_MCP_SERVE"

func TestMain(m *testing.M) {
	if file := os.Getenv(serveEnv); file != "" {
		s := worldmcp.NewServer(file, world.Limits{MaxCommands: 1000}, nil)
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func connect(t *testing.T, file string) *mcp.ClientSession {
	t.Helper()
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), serveEnv+"="+file)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	s, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: c}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func callShell(t *testing.T, s *mcp.ClientSession, command string) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"command": command}})
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return res, b.String()
}

// TestMCPStdio: one tool, "shell"; state survives a restart of the server (it lives in the
// file); a limit, a panic and a broken world come back as tool errors, and the server keeps
// serving.
func TestMCPStdio(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "w.world")
	if err := world.New().Save(file); err != nil {
		t.Fatal(err)
	}
	s := connect(t, file)
	tools, err := s.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "shell" {
		t.Fatalf("tools: %+v %v", tools, err)
	}
	if _, out := callShell(t, s, "mkdir d; cd d; x=42; f() { echo f$1; }; echo hi > g"); !strings.Contains(out, "[exit status 0]") {
		t.Errorf("first call: %s", out)
	}
	s.Close()

	s = connect(t, file) // a restarted server
	defer s.Close()
	res, out := callShell(t, s, "pwd; echo $x; f 1; cat g; exit 3")
	if res.IsError || !strings.Contains(out, "/work/d\n42\nf1\nhi\n") || !strings.Contains(out, "[exit status 3]") {
		t.Errorf("after restart: %s", out)
	}
	if res, out := callShell(t, s, "while true; do :; done"); !res.IsError || !strings.Contains(out, "commands") {
		t.Errorf("limit: not a tool error: %v %s", res.IsError, out)
	}
	// A panic — in the exec's goroutine, in a pipeline stage's (its worker dies), in test -O
	// (issue 21) — is that call's tool error; the server keeps serving.
	for _, cmd := range []string{"forkbomb-test-panic a", "forkbomb-test-panic b | cat"} {
		if res, out := callShell(t, s, cmd); !res.IsError || !strings.Contains(out, "forkbomb-test-panic") || !strings.Contains(out, "[exit status 125]") {
			t.Errorf("%s: not a tool error: %v %s", cmd, res.IsError, out)
		}
	}
	if res, out := callShell(t, s, "test -O g; [[ -G g ]] | cat; echo owner"); res.IsError || !strings.Contains(out, "owner") {
		t.Errorf("test -O: %v %s", res.IsError, out)
	}
	if err := os.WriteFile(file, []byte("{broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	if res, out := callShell(t, s, "echo hi"); !res.IsError || !strings.Contains(out, "not a valid world file") {
		t.Errorf("broken world: %v %s", res.IsError, out)
	}
	if err := world.New().Save(file); err != nil {
		t.Fatal(err)
	}
	if res, out := callShell(t, s, "echo alive"); res.IsError || !strings.Contains(out, "alive") {
		t.Errorf("the server did not survive: %s", out)
	}
}
