package cli

import (
	"context"
	"strings"

	"github.com/spf13/pflag"

	"github.com/forkbomb/forkbomb/internal/backend"
	"github.com/forkbomb/forkbomb/internal/engine"
	"github.com/forkbomb/forkbomb/internal/run"
	"github.com/forkbomb/forkbomb/internal/workspace"
)

// backendFlags pick where forks run (--backend, from the backends'
// registry) and carry every backend's own flags. A backend this build
// does not link (its Config is nil) is forkbomb-full's: the core hands it
// the whole command line before doing anything (ready).
type backendFlags struct {
	name    string
	reg     []*backend.Backend
	configs map[string]backend.Config
	b       build
}

func newBackendFlags(b build) *backendFlags {
	return &backendFlags{reg: backend.Registry(b.Backends), configs: map[string]backend.Config{}, b: b}
}

func (bf *backendFlags) add(f *pflag.FlagSet) {
	var list []string
	for _, be := range bf.reg {
		s := be.Summary
		if runs := be.Engines(); len(runs) < len(engine.Names()) {
			s += "; engines " + backend.JoinAnd(runs)
		}
		list = append(list, be.Name+" ("+s+")")
	}
	enumVar(f, &bf.name, "backend", bf.reg[0].Name, "where forks run: "+orList(list), backend.Names(bf.reg)...)
	for _, be := range bf.reg {
		cfg, flags := be.Flags()
		bf.configs[be.Name] = cfg
		for _, fl := range flags {
			usage := be.Name + ": " + fl.Usage
			if len(fl.Values) > 0 {
				enumVar(f, fl.Value, fl.Name, *fl.Value, usage, fl.Values...)
			} else {
				f.StringVar(fl.Value, fl.Name, *fl.Value, usage)
			}
		}
	}
}

// chosen is the backend --backend names.
func (bf *backendFlags) chosen() *backend.Backend {
	b, err := backend.Lookup(bf.reg, bf.name)
	if err != nil {
		panic(err) // --backend is an enum of the registry's names
	}
	return b
}

// where names where the chosen backend's forks run, for the canary's
// results ("": this machine); a Config says it (backend.AgentFinder).
func (bf *backendFlags) where() string {
	if bf == nil || bf.chosen().HostPrograms {
		return ""
	}
	if f, ok := bf.configs[bf.name].(backend.AgentFinder); ok {
		return f.Where()
	}
	return bf.name
}

// setup fills s with where the forks run: the backend (engines it cannot
// run are refused), how an agent CLI is found there, where a canary's
// result is kept for, and the flags themselves for a canary run there.
func (bf *backendFlags) setup(s *Setup) {
	s.Backend, s.Find, s.Where, s.backend = bf.chosen(), bf.finder(), bf.where(), bf
}

// finder finds agent CLIs where the chosen backend's forks run them (an
// image's); nil: this machine's.
func (bf *backendFlags) finder() func(ctx context.Context, name, given string) (string, string, error) {
	if bf.chosen().HostPrograms {
		return nil
	}
	if f, ok := bf.configs[bf.name].(backend.AgentFinder); ok {
		return f.FindAgent
	}
	return nil
}

// ready hands the whole command line to forkbomb-full when the chosen
// backend is not linked in this build; code is the verb's status when
// that cannot be done. Call it before the command does anything.
func (bf *backendFlags) ready(code int) error {
	if bf.configs[bf.name] != nil {
		return nil
	}
	return bf.b.handoff("--backend "+bf.name, code)
}

// store puts a race's forks on the chosen backend (the judge stays on
// local where the backend says so). The returned close releases what is
// left there.
func (bf *backendFlags) store(ctx context.Context, o *run.Options, local *workspace.Store) (func(), error) {
	// run's RunE has handed on (ready) and the engine was refused
	// (Setup.Backend) before any proxy or canary: this is the guard
	// against a nil Config only.
	if err := bf.ready(ExitCouldNotRun); err != nil {
		return nil, err
	}
	return bf.configs[bf.name].Store(ctx, o, local)
}

// probe reports what the chosen backend enforces (sandbox --probe).
func (bf *backendFlags) probe(ctx context.Context, stdio IO, asJSON bool) error {
	if err := bf.ready(ExitSetup); err != nil {
		return err
	}
	if err := bf.configs[bf.name].Probe(ctx, stdio.Out, asJSON); err != nil {
		return &exitError{code: ExitSetup, msg: "probe: " + err.Error(), err: err}
	}
	return nil
}

// probeExamples are sandbox --help's examples of probing each backend
// besides the default.
func (bf *backendFlags) probeExamples() string {
	var b strings.Builder
	for _, be := range bf.reg[1:] {
		b.WriteString("\n  forkbomb sandbox --probe --backend " + be.Name)
	}
	return b.String()
}

// doc is what run's --help says of the backends.
func (bf *backendFlags) doc() string {
	var b strings.Builder
	for _, be := range bf.reg {
		if be.Doc == "" {
			continue
		}
		text := "With --backend " + be.Name + " " + be.Doc
		if runs := be.Engines(); len(runs) < len(engine.Names()) {
			var refused []string
			for _, d := range engine.Descriptors() {
				if !be.Runs(d) {
					refused = append(refused, d.Name)
				}
			}
			are := " are refused on it, before anything runs (their CLIs are not in its forks)."
			if len(refused) == 1 {
				are = " is refused on it, before anything runs (its CLI is not in its forks)."
			}
			text += " It races the " + backend.JoinAnd(runs) + " engines; " + backend.JoinAnd(refused) + are
		}
		b.WriteString("\n" + wrap(text, ""))
	}
	return b.String()
}
