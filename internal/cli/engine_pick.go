package cli

import (
	"fmt"
	"os/exec"
	"strings"

	"github.com/forkbomb/forkbomb/internal/engine"
)

// pickEngine is the engine a run uses when --engine is not given: Claude
// Code when its CLI is installed (on PATH, or given with --agent-bin) and
// no --agent names a program for the command engine; the command engine
// when one does. With neither, the error says how to install Claude Code
// or which engine to pick, rather than failing later on a missing agent.
func pickEngine(named string, given bool, agent, agentBin string) (string, error) {
	switch {
	case given:
		return named, nil
	case agent != "":
		return "command", nil
	case agentBin != "":
		return "claude-code", nil
	}
	if _, err := exec.LookPath("claude"); err == nil {
		return "claude-code", nil
	}
	return "", fmt.Errorf("no engine: the default, claude-code, needs the claude CLI (npm install -g %s); or pick one with --engine (%s), e.g. --engine command --agent \"./my-agent\"",
		engine.ClaudeCodePackage, strings.Join(engine.Names(), ", "))
}
