package cli

import (
	"fmt"
	"os/exec"
	"strings"

	"github.com/forkbomb/forkbomb/internal/engine"
)

// pickEngine is the engine a run uses when --engine is not given: the
// default engine (engine.Default) when its CLI is installed (on PATH, or
// given with --agent-bin) and no --agent names a program for the engine
// that runs one; that engine when one does. With neither, the error says
// how to install the default's CLI or which engine to pick, rather than
// failing later on a missing agent.
func pickEngine(named string, given bool, agent, agentBin string) (string, error) {
	def := engine.Default()
	switch {
	case given:
		return named, nil
	case agent != "":
		return agentEngine().Name, nil
	case agentBin != "":
		return def.Name, nil
	}
	if _, err := exec.LookPath(def.Bin); err == nil {
		return def.Name, nil
	}
	return "", fmt.Errorf("no engine: the default, %s, needs the %s CLI (npm install -g %s); or pick one with --engine (%s), e.g. --engine %s --%s \"./my-agent\"",
		def.Name, def.Bin, def.Package, strings.Join(engine.Names(), ", "), agentEngine().Name, engine.FlagAgent.Name)
}

// agentEngine is the engine that runs the program --agent names.
func agentEngine() *engine.Descriptor {
	for _, d := range engine.Descriptors() {
		if d.Takes(engine.FlagAgent) {
			return d
		}
	}
	panic("engine: no engine takes --agent")
}
