package lab

import (
	"fmt"
	"strings"

	"github.com/forkbomb/forkbomb/internal/home"
)

// Task is one race, as a file: what `forkbomb run` takes from its flags.
// An empty field is the flag left out.
type Task struct {
	Repo   string   `toml:"repo" json:"repo,omitempty"`
	Rev    string   `toml:"rev" json:"rev,omitempty"`
	Prompt string   `toml:"prompt" json:"prompt"`
	Test   string   `toml:"test" json:"test"`
	Hidden []string `toml:"hidden" json:"hidden,omitempty"`
	Engine string   `toml:"engine" json:"engine,omitempty"`
	Agent  string   `toml:"agent" json:"agent,omitempty"` // the command engine's agent
	Model  string   `toml:"model" json:"model,omitempty"`
	Forks  int      `toml:"forks" json:"forks,omitempty"`
	// Policy is a stored policy's id or a policy file (a path holding a
	// slash or ending in .toml); empty is the default policy.
	Policy string `toml:"policy" json:"policy,omitempty"`
}

func (t *Task) check() (key, reason string) {
	switch {
	case strings.TrimSpace(t.Prompt) == "":
		return "prompt", "a task needs a prompt"
	case strings.TrimSpace(t.Test) == "":
		return "test", "a task needs a test command: forks are judged by the tests their patch passes"
	case t.Forks < 0:
		return "forks", "must not be negative"
	}
	if t.Policy != "" && !isFileRef(t.Policy) {
		if err := home.ValidateID("policy", t.Policy); err != nil {
			return "policy", fmt.Sprintf("%q is neither a policy id nor a .toml file", t.Policy)
		}
	}
	return "", ""
}

// ParseTask reads a task file's bytes strictly; file names it in errors.
func ParseTask(file string, data []byte) (*Task, error) {
	var t Task
	if err := decodeStrict(file, data, &t); err != nil {
		return nil, err
	}
	return &t, nil
}
