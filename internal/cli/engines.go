package cli

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/forkbomb/forkbomb/internal/backend"
	"github.com/forkbomb/forkbomb/internal/engine"
)

// Every verb that drives an agent (run, eval, canary, demo, world race and
// drive) takes its engine flags from EngineFlags and its agent from ready:
// what an engine needs is read from its engine.Descriptor, never from a
// switch on its name here.

// EngineFlags are the engine flags of a verb that drives an agent: the
// engine (--engine), the settings of the engines it offers (their flags
// are the descriptors'), and --recheck when one of them has a canary.
type EngineFlags struct {
	Name     string
	Settings engine.Settings
	Recheck  bool
	offered  []*engine.Descriptor
}

// NewEngineFlags are the flags of a verb offering the engines offer
// accepts (nil: every one), in the registry's order.
func NewEngineFlags(offer func(*engine.Descriptor) bool) *EngineFlags {
	e := &EngineFlags{}
	for _, d := range engine.Descriptors() {
		if offer == nil || offer(d) {
			e.offered = append(e.offered, d)
		}
	}
	return e
}

// Offered are the names of the engines offered, in order.
func (e *EngineFlags) Offered() []string {
	var out []string
	for _, d := range e.offered {
		out = append(out, d.Name)
	}
	return out
}

// AddEngine registers --engine: one of the engines offered, def by default
// ("": the first), its help what, then each engine's summary.
func (e *EngineFlags) AddEngine(f *pflag.FlagSet, def, what string) {
	if def == "" {
		def = e.offered[0].Name
	}
	var list []string
	for _, d := range e.offered {
		list = append(list, d.Name+" ("+d.Summary+")")
	}
	enumVar(f, &e.Name, "engine", def, what+": "+orList(list), e.Offered()...)
}

// AddSettings registers the flags of the engines offered, each once, its
// help naming the engines that read it.
func (e *EngineFlags) AddSettings(f *pflag.FlagSet) {
	var seen []*engine.Flag
	for _, d := range e.offered {
		for _, fl := range d.Flags {
			if slices.Contains(seen, fl) {
				continue
			}
			seen = append(seen, fl)
			usage := fl.Usage + " (" + strings.Join(e.taking(func(d *engine.Descriptor) bool { return d.Takes(fl) }), ", ") + ")"
			switch p := fl.Field(&e.Settings).(type) {
			case *string:
				if len(fl.Values) > 0 {
					enumVar(f, p, fl.Name, fl.Values[0], usage, fl.Values...)
				} else {
					f.StringVar(p, fl.Name, *p, usage)
				}
			case *int:
				f.IntVar(p, fl.Name, *p, usage)
			case *float64:
				f.Float64Var(p, fl.Name, *p, usage)
			default:
				panic(fmt.Sprintf("engine flag --%s: a setting of type %T", fl.Name, p))
			}
		}
	}
}

// AddRecheck registers --recheck when an engine offered has a canary.
func (e *EngineFlags) AddRecheck(f *pflag.FlagSet, what string) {
	if gated := e.taking(func(d *engine.Descriptor) bool { return d.Canary }); len(gated) > 0 {
		f.BoolVar(&e.Recheck, "recheck", false, strings.Join(gated, ", ")+": "+what)
	}
}

// taking are the names of the engines offered that ok accepts.
func (e *EngineFlags) taking(ok func(*engine.Descriptor) bool) []string {
	var out []string
	for _, d := range e.offered {
		if ok(d) {
			out = append(out, d.Name)
		}
	}
	return out
}

// Docs are the engines offered as a verb's long help lists them.
func (e *EngineFlags) Docs() string {
	var b strings.Builder
	for _, d := range e.offered {
		b.WriteString(wrap("  "+d.Name+": "+d.Doc, "    "))
	}
	return b.String()
}

// Setup is how a verb readies an engine, besides its name.
type Setup struct {
	Settings engine.Settings
	// Allow are the hosts of --network allow:, served to the agent's
	// commands by the same model proxy as its model.
	Allow []string
	// Recheck runs the canary before the gate (--recheck); NoCanary
	// skips the gate: the canary itself, and the demo, whose model is
	// forkbomb's own script.
	Recheck, NoCanary bool
	// Backend, when set, is where the forks live: an engine its forks
	// cannot run is refused before anything starts. Find, when set, finds
	// an agent CLI where those forks run it (engine.Settings.Find).
	Backend *backend.Backend
	Find    func(ctx context.Context, name, given string) (bin, version string, err error)
	// Where is where the forks run, as the canary's results are kept
	// ("": this machine): the gate asks for a canary passed there.
	// backend is the verb's backend flags, for a canary run there
	// (--recheck); nil: this machine.
	Where   string
	backend *backendFlags
	// Getenv is forkbomb's environment (nil: os.Getenv); the demo's
	// stands its scripted model in for every model.
	Getenv func(string) string
}

// ready readies the engine called name as every verb does: refused where
// the backend cannot run it; the settings the user left out from its
// descriptor and forkbomb's environment; a model proxy holding the real
// credential when its agent CLI needs one; built under ctx; and started
// only once its canary passed. close releases what it holds.
func ready(ctx context.Context, stdio IO, name string, s Setup) (engine.Agent, func(), error) {
	d, err := engine.Lookup(name)
	if err != nil {
		return nil, nil, err
	}
	if s.Backend != nil {
		if err := s.Backend.Refuse(d); err != nil {
			return nil, nil, err
		}
	}
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	es := s.Settings
	d.Fill(&es, getenv)
	if d.Bin != "" && s.Find != nil {
		es.Find = s.Find
	}
	done := func() {}
	if d.Upstream != nil {
		p, err := startModelProxy(d, es, s.Allow, getenv)
		if err != nil {
			return nil, nil, err
		}
		es.Proxy, done = p, func() { p.Close() }
	}
	a, err := engine.New(ctx, name, es)
	if err != nil {
		done()
		return nil, nil, err
	}
	if d.Canary && !s.NoCanary {
		if err := checkCanary(ctx, stdio, name, es, a.Info(), s); err != nil {
			done()
			return nil, nil, err
		}
	}
	return a, done, nil
}

// orList is items as a person lists alternatives: "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// wrap breaks text into lines of at most 78 columns, each one after the
// first indented by indent.
func wrap(text, indent string) string {
	var b strings.Builder
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > 78 {
			b.WriteString(line + "\n")
			line = indent + w
			continue
		}
		if line == "" {
			line = strings.Repeat(" ", len(text)-len(strings.TrimLeft(text, " "))) + w
		} else {
			line += " " + w
		}
	}
	return b.String() + line + "\n"
}
