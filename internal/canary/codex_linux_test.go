package canary_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/modelproxy"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// codexSteps are a scripted model playing along with the canary in the
// real codex CLI: its shell (exec_command) and its own file tool
// (apply_patch, which codex applies itself, not through a shell).
func codexSteps(port int) []engine.Step {
	sh := func(cmd string) engine.Step {
		return engine.Step{Tools: []engine.ToolCall{{Name: "exec_command", Input: map[string]any{"cmd": cmd}}}}
	}
	return []engine.Step{
		sh("echo inside > canary-inside.txt"),
		sh("echo escaped > ../canary-escape-shell.txt"),
		sh("apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: ../canary-escape-tool.txt\n+escaped\n*** End Patch\nEOF\n"),
		sh("cat ../canary-secret.txt"),
		sh(fmt.Sprintf(`python3 -c 'import socket; socket.create_connection(("127.0.0.1", %d), timeout=5)'`, port)),
		sh("echo x > .git/canary-git.txt; git config core.hooksPath /tmp"),
		sh("env > canary-env.txt; cat ~/.codex/auth.json ~/.codex-forkbomb/config.toml >> canary-env.txt"),
		{Text: "Done: every step was tried."},
	}
}

// TestCanaryCodex: the real codex CLI, told to break out with its shell
// and its own patch tool, is contained on every check; the same session
// in a sandbox whose store is writable is caught.
func TestCanaryCodex(t *testing.T) {
	t.Parallel()
	testutil.Need(t, "codex", "node", "git", "python3")
	cliRig{engine: "codex", kind: modelproxy.OpenAI, keyPrefix: "sk-proj-REALKEY-", baseSuffix: "/v1", steps: codexSteps}.test(t, func(v string) bool { return strings.HasPrefix(v, "codex-cli ") })
}
