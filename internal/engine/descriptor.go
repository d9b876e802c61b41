package engine

import (
	"context"

	"github.com/forkbomb/forkbomb/internal/modelproxy"
)

// Descriptor is everything forkbomb needs to know of an engine besides
// its Agent: its name and help, the settings it takes from the command
// line, what it needs before it can run (keys from forkbomb's
// environment, a model proxy, a passed canary, a program installed
// here), where it can run, and its constructor. Each engine declares
// its own in its file; registry.go lists them. A verb that drives an
// agent looks a name up and readies it from this alone, so no verb names
// an engine.
type Descriptor struct {
	// Name is what --engine takes and the record says.
	Name string
	// Summary is its entry in --engine's help, Doc what a verb's long
	// help says of it.
	Summary, Doc string
	// Flags are the settings it takes from the command line.
	Flags []*Flag
	// Model is the model when none is given; "": the agent CLI's own.
	Model string
	// Env fills the settings it reads from forkbomb's environment (the
	// key and endpoint of a loop that runs here) where s has none; nil:
	// it reads none.
	Env func(s *Settings, getenv func(string) string)
	// Upstream is the model API its agent CLI reaches through a model
	// proxy of forkbomb's, with the real credential read from forkbomb's
	// environment (the proxy adds it; no fork holds it); nil: it needs
	// no proxy.
	Upstream func(getenv func(string) string) (modelproxy.Upstream, error)
	// Canary: forks start with it only once its agent CLI has passed the
	// canary in its installed version.
	Canary bool
	// Bin is the agent CLI it runs whole in each fork, found on this
	// machine's PATH unless Settings.AgentBin names it, and Package the
	// npm package it is installed from; "" for none. Only a backend whose
	// forks see this machine's programs can run such an engine.
	Bin, Package string
	// Loop: forkbomb's own tool loop, run in this process; a fork gets
	// only its shell commands and file edits, so any workspace that
	// executes a command serves it (a pod, a world).
	Loop bool
	// MCP: its agent CLI can take a workspace's MCP server as its only
	// tool (ToolServer), which is how it works a world.
	MCP bool
	// Tools names the tools its model is given (ToolsShellEditor,
	// ToolsClaude, ToolsCodex): what a scripted model must call to play
	// it. "": it has no model of forkbomb's choosing.
	Tools string
	// Default marks the engine a run uses when none is named and its
	// agent CLI is installed.
	Default bool
	// New builds it; ctx bounds what it runs to check itself (its CLI's
	// --version), so an interruption stops that too.
	New func(ctx context.Context, s Settings) (Agent, error)
}

// The tool sets a model is given, by engine (Descriptor.Tools).
const (
	// ToolsShellEditor: forkbomb's loop's shell and editor (tools.go).
	ToolsShellEditor = "shell+editor"
	// ToolsClaude: Claude Code's own (Bash, Read, Write, Edit…).
	ToolsClaude = "claude"
	// ToolsCodex: the Codex CLI's own (exec_command, apply_patch…).
	ToolsCodex = "codex"
)

// Fill gives s what the user left out: the engine's model, and what it
// reads from forkbomb's environment (getenv is os.Getenv outside tests).
func (d *Descriptor) Fill(s *Settings, getenv func(string) string) {
	if s.Model == "" {
		s.Model = d.Model
	}
	if d.Env != nil {
		d.Env(s, getenv)
	}
}

// Takes says whether the engine reads flag f.
func (d *Descriptor) Takes(f *Flag) bool {
	for _, g := range d.Flags {
		if g == f {
			return true
		}
	}
	return false
}
