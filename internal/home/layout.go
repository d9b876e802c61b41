package home

import (
	"fmt"
	"os"
	"path/filepath"
)

// EnvVar names the variable that moves the state home.
const EnvVar = "FORKBOMB_HOME"

// Layout is one state home. Its methods name the folders in it; none of
// them creates anything.
type Layout struct {
	Root string // absolute
}

// New is the layout rooted at root (made absolute).
func New(root string) (Layout, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return Layout{}, fmt.Errorf("state directory %s: %w", root, err)
	}
	return Layout{Root: abs}, nil
}

// Default is $FORKBOMB_HOME, or ~/.forkbomb when it is unset.
func Default() (Layout, error) {
	return FromEnv(os.Getenv, os.UserHomeDir)
}

// FromEnv is Default with its sources passed in: getenv for
// $FORKBOMB_HOME, userHome for the fallback.
func FromEnv(getenv func(string) string, userHome func() (string, error)) (Layout, error) {
	if h := getenv(EnvVar); h != "" {
		return New(h)
	}
	h, err := userHome()
	switch {
	case err != nil:
		return Layout{}, fmt.Errorf("locate state directory: set %s: %w: %w", EnvVar, ErrNoHome, err)
	case h == "":
		return Layout{}, fmt.Errorf("locate state directory: set %s: %w", EnvVar, ErrNoHome)
	}
	return New(filepath.Join(h, ".forkbomb"))
}

// Workspaces is the workspace store's root.
func (l Layout) Workspaces() string { return filepath.Join(l.Root, "workspaces") }

// Runs is the default runs directory.
func (l Layout) Runs() string { return filepath.Join(l.Root, "runs") }

// Judge is the judge's cache (baselines by base, command and hidden tests).
func (l Layout) Judge() string { return filepath.Join(l.Root, "judge") }

// Worlds holds world files.
func (l Layout) Worlds() string { return filepath.Join(l.Root, "worlds") }

// Lab holds the lab's stored tasks, evaluators and policies.
func (l Layout) Lab() string { return filepath.Join(l.Root, "lab") }

// EvalBoard is where eval's attempts on stored tasks accumulate (read by
// eval and by the web view).
func (l Layout) EvalBoard() string { return filepath.Join(l.Lab(), "eval", "board.json") }

// Canary is the last canary report.
func (l Layout) Canary() string { return filepath.Join(l.Root, "canary.json") }

// KubeAgents is where the agent CLIs found in a cluster's images are kept,
// by image digest.
func (l Layout) KubeAgents() string { return filepath.Join(l.Root, "kube-agents.json") }

// Run is one run's folder under the default runs directory; id is checked.
func (l Layout) Run(id string) (string, error) {
	return Join(l.Runs(), "run", id)
}

// Join is dir/id once id has passed ValidateID as a kind ("run",
// "workspace"): the one way an id becomes a path.
func Join(dir, kind, id string) (string, error) {
	if err := ValidateID(kind, id); err != nil {
		return "", err
	}
	return filepath.Join(dir, id), nil
}
