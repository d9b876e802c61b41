// Package backend declares where a race's forks live: this machine's
// sandbox (local), a Kubernetes cluster, and the next one (worlds, a VM, a
// remote host). Each is one Backend, declared in its own file and listed
// in registry.go: its name and help, its own flags, which engines its
// forks can run, and — in a binary that links it — the store that puts a
// race's forks there and the probe of what it enforces. The CLI looks a
// name up and knows no backend's shape.
package backend

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// Backend is one place forks can live.
type Backend struct {
	// Name is what --backend takes.
	Name string
	// Summary is its entry in --backend's help, Doc what run's --help
	// says of it ("" for nothing).
	Summary, Doc string
	// HostPrograms: its forks see this machine's programs, so an agent
	// CLI installed here runs in them (engine.Descriptor.Bin).
	HostPrograms bool
	// ImagePrograms: its forks run the programs of an image of their own,
	// so an agent CLI runs in them where the image holds it, found there
	// by its Config (an AgentFinder).
	ImagePrograms bool
	// Flags makes a fresh Config and the backend's own flags, bound to
	// its settings: a verb registers the flags, parses its command line,
	// then uses the Config. The Config is nil in a binary that does not
	// link the backend: forkbomb-full links every one, and the core
	// hands it a command line that picks such a backend.
	Flags func() (Config, []Flag)
}

// Config is a backend with its flags, read when it is used.
type Config interface {
	// Store puts a race's forks on the backend (o.Store; o.JudgeStore
	// where the judge's forks stay in local); close releases what is
	// left there.
	Store(ctx context.Context, o *run.Options, local *workspace.Store) (close func(), err error)
	// Probe writes what the backend enforces, as text or as JSON.
	Probe(ctx context.Context, out io.Writer, asJSON bool) error
}

// AgentFinder is a Config whose forks run an image's programs: it finds
// an engine's agent CLI there (engine.Settings.Find).
type AgentFinder interface {
	FindAgent(ctx context.Context, name, given string) (bin, version string, err error)
	// Where names where its forks run, as the canary's results are kept
	// for it (its store's canary.Remote says the same).
	Where() string
}

// Flag is one of a backend's own flags.
type Flag struct {
	Name, Usage string
	// Values, when set, are the only values it takes (checked when the
	// command line is parsed).
	Values []string
	// Value is the setting it fills, holding its default: a *string.
	Value *string
}

// Runs says whether the backend's forks can run engine d's agent: an
// agent CLI runs where the forks see this machine's programs, or an
// image's that may hold it (whether it does is found when the engine is
// made).
func (b *Backend) Runs(d *engine.Descriptor) bool {
	return d.Bin == "" || b.HostPrograms || b.ImagePrograms
}

// Refuse is why the backend cannot run engine d, before anything runs
// (never run weaker); nil when it can.
func (b *Backend) Refuse(d *engine.Descriptor) error {
	if b.Runs(d) {
		return nil
	}
	return fmt.Errorf("--backend %s races the %s engines; %s is not supported on it yet (its CLI, %s, is not in the backend's forks)",
		b.Name, JoinAnd(b.Engines()), d.Name, d.Bin)
}

// Engines are the names of the engines the backend runs, in --help's
// order.
func (b *Backend) Engines() []string {
	var out []string
	for _, d := range engine.Descriptors() {
		if b.Runs(d) {
			out = append(out, d.Name)
		}
	}
	return out
}

// JoinAnd is words as a person lists them: "a", "a and b", "a, b and c".
func JoinAnd(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}
