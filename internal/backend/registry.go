package backend

import (
	"fmt"
	"strings"
)

// Linked is what a binary links of the backends the core forkbomb does
// not: their implementations, which cli.Options carries from
// internal/cli/full. The zero value is the core's.
type Linked struct {
	// Kubernetes opens the kubernetes backend (over internal/kube and
	// client-go).
	Kubernetes func(*Kube) Config
}

// Registry is every backend, in the order --help lists them, with what l
// links; the first is the default. It is the one place a backend is
// registered.
func Registry(l Linked) []*Backend {
	return []*Backend{Local(), Kubernetes(l.Kubernetes)}
}

// Names are the backends' names, in order.
func Names(reg []*Backend) []string {
	out := make([]string, len(reg))
	for i, b := range reg {
		out[i] = b.Name
	}
	return out
}

// Lookup is the backend called name in reg.
func Lookup(reg []*Backend, name string) (*Backend, error) {
	for _, b := range reg {
		if b.Name == name {
			return b, nil
		}
	}
	return nil, fmt.Errorf("unknown backend %q (valid: %s)", name, strings.Join(Names(reg), ", "))
}
