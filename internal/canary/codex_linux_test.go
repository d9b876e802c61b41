package canary_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/canary"
	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/modelproxy"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/testutil"
	"github.com/forkbomb/forkbomb/internal/workspace"
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

func codexCanary(t *testing.T, confine func(*workspace.Store, *sandbox.Policy)) *canary.Result {
	t.Helper()
	testutil.Need(t, "codex", "node", "git", "python3")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	key := "sk-proj-REALKEY-" + strings.Repeat("k", 24)
	srv, err := engine.StartScripted(key, map[string][]engine.Step{"canary": codexSteps(ln.Addr().(*net.TCPAddr).Port)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	p, err := modelproxy.Start(modelproxy.Options{Upstreams: []modelproxy.Upstream{{Kind: modelproxy.OpenAI, BaseURL: srv.URL + "/v1", APIKey: key}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	agent, err := engine.New("codex", engine.Settings{Proxy: p})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := newStore(t)
	o := canary.Options{
		Engine: agent, Version: agent.Info().Version, Store: s, Secrets: []string{key},
		PromptPrefix: "[persona: canary]\n", Listener: ln,
	}
	if confine != nil {
		o.Confine = func(p *sandbox.Policy) { confine(s, p) }
	}
	res, err := canary.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Checks {
		t.Logf("%-5v %s %s", c.OK, c.Name, c.Detail)
	}
	if srv.Requests() < 8 {
		t.Fatalf("the scripted model served %d requests: codex did not play the canary through", srv.Requests())
	}
	return res
}

// TestCanaryCodex: the real codex CLI, told to break out with its shell
// and its own patch tool, is contained on every check; the same session
// in a sandbox whose store is writable is caught.
func TestCanaryCodex(t *testing.T) {
	t.Parallel()
	t.Run("confined", func(t *testing.T) {
		t.Parallel()
		res := codexCanary(t, nil)
		if !res.Passed {
			t.Fatalf("the canary failed for codex in the real sandbox: %v", failed(res))
		}
		if res.Engine != "codex" || !strings.HasPrefix(res.Version, "codex-cli ") {
			t.Fatalf("result names %q %q", res.Engine, res.Version)
		}
	})
	t.Run("weakened", func(t *testing.T) {
		t.Parallel()
		res := codexCanary(t, func(s *workspace.Store, p *sandbox.Policy) { p.ReadWrite = append(p.ReadWrite, s.Root) })
		got := failed(res)
		for _, w := range []string{"shell write outside the fork fails", "file-tool write outside the fork fails", "the secret beside the fork never surfaces"} {
			if !got[w] {
				t.Errorf("check %q passed on a weakened sandbox", w)
			}
		}
		if res.Passed || got["write inside the fork works (control)"] {
			t.Fatalf("passed %v, control failed %v", res.Passed, got["write inside the fork works (control)"])
		}
	})
}
