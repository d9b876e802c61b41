package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// enumValue is a string flag that takes one of a fixed set of values. It is
// checked when the flags are parsed, so a typo stops the command before
// anything runs, with the valid values in the message; --help shows them
// as the flag's type (--mode auto|namespaces|landlock).
type enumValue struct {
	p     *string
	valid []string
}

// enumVar registers an enum flag on f, set to def (one of valid).
func enumVar(f *pflag.FlagSet, p *string, name, def, usage string, valid ...string) {
	if !slices.Contains(valid, def) {
		panic(fmt.Sprintf("flag --%s: default %q is not one of %v", name, def, valid))
	}
	*p = def
	f.Var(&enumValue{p: p, valid: valid}, name, usage)
}

func (e *enumValue) Set(s string) error {
	if !slices.Contains(e.valid, s) {
		return fmt.Errorf("%q is not one of %s", s, strings.Join(e.valid, ", "))
	}
	*e.p = s
	return nil
}

func (e *enumValue) String() string { return *e.p }

func (e *enumValue) Type() string { return strings.Join(e.valid, "|") }
