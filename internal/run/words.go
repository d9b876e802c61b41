package run

import (
	"errors"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// raceSettings names, for a person, the parts of a fork's sandbox policy
// the race fills in: the agent is --agent, the rest is the race's own
// doing, never a flag of 'forkbomb sandbox' the user did not pass.
var raceSettings = map[string]string{
	"Command":   "--agent",
	"Memory":    "--memory",
	"Pids":      "--pids",
	"CPUs":      "--cpus",
	"Timeout":   "--timeout",
	"Hide":      "a folder the race hides from forks",
	"SetEnv":    "the agent's environment",
	"Workdir":   "the fork",
	"Overlay":   "the fork",
	"MaxOutput": "the race's output limit",
}

// ownWords words a refusal of a fork's sandbox policy in the race's terms
// (see raceSettings); it stays a *sandbox.PolicyError with its field.
func ownWords(err error) error {
	var pe *sandbox.PolicyError
	if !errors.As(err, &pe) {
		return err
	}
	name, ok := raceSettings[pe.Field]
	if !ok {
		name = "the race's own " + pe.Field
	}
	return pe.Setting(name)
}
