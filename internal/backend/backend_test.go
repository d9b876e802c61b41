package backend

import (
	"slices"
	"strings"
	"testing"

	"github.com/forkbomb/forkbomb/internal/engine"
)

// TestRegistry: every backend once by name, local first (the default);
// a backend's flags are its own (no two share a name) and hold valid
// defaults; a backend not linked declares its flags all the same.
func TestRegistry(t *testing.T) {
	t.Parallel()
	reg := Registry(Linked{})
	if reg[0].Name != "local" {
		t.Errorf("the default backend is %s", reg[0].Name)
	}
	seen := map[string]bool{}
	for _, b := range reg {
		if seen[b.Name] || b.Summary == "" {
			t.Errorf("%q: a name used twice, or no summary", b.Name)
		}
		seen[b.Name] = true
		cfg, flags := b.Flags()
		if cfg == nil && b.Name == "local" {
			t.Errorf("the core does not link local")
		}
		for _, f := range flags {
			if seen["--"+f.Name] {
				t.Errorf("two backends' flags are called --%s", f.Name)
			}
			seen["--"+f.Name] = true
			if len(f.Values) > 0 && !slices.Contains(f.Values, *f.Value) {
				t.Errorf("--%s defaults to %q, not one of %v", f.Name, *f.Value, f.Values)
			}
		}
	}
	if _, err := Lookup(reg, "vm"); err == nil || !strings.Contains(err.Error(), "local, kubernetes") {
		t.Errorf("Lookup of an unknown backend: %v", err)
	}
}

// TestRefuse: a backend whose forks do not see this machine's programs
// refuses every agent CLI engine, by name, listing the engines it runs;
// one whose forks do refuses none.
func TestRefuse(t *testing.T) {
	t.Parallel()
	remote := &Backend{Name: "remote"}
	here := &Backend{Name: "here", HostPrograms: true}
	for _, d := range engine.Descriptors() {
		err := remote.Refuse(d)
		if (err != nil) != (d.Bin != "") {
			t.Errorf("remote, %s: %v", d.Name, err)
		}
		if err != nil && (!strings.Contains(err.Error(), d.Name+" is not supported") || strings.Contains(err.Error(), "races the "+d.Name)) {
			t.Errorf("remote, %s: %v", d.Name, err)
		}
		if err := here.Refuse(d); err != nil {
			t.Errorf("here, %s: %v", d.Name, err)
		}
	}
	if got := JoinAnd([]string{"a", "b", "c"}); got != "a, b and c" {
		t.Errorf("JoinAnd = %q", got)
	}
}
