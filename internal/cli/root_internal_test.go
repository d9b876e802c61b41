package cli

import (
	"io"
	"testing"
)

// TestRootOneVerb: a command line that names a verb gets a tree of that verb alone, the same
// command the whole tree holds; every verb of the whole tree is reachable so (a verb missing
// from the table, or named there other than its Use, would not be).
func TestRootOneVerb(t *testing.T) {
	t.Parallel()
	stdio := IO{In: nil, Out: io.Discard, Err: io.Discard}
	b := build{handoff: refuseHandoff}
	all := newRootCmd(stdio, b, nil)
	n := 0
	for _, c := range all.Commands() {
		if c.Name() == "help" || c.Name() == "completion" || c.Name() == "gateway" {
			continue // cobra's own, and the full build's hand-off
		}
		n++
		one := newRootCmd(stdio, b, []string{c.Name(), "--help"})
		if got := one.Commands(); len(got) != 1 || got[0].Name() != c.Name() || got[0].Short != c.Short {
			t.Errorf("forkbomb %s: the tree holds %d commands, want only %q", c.Name(), len(got), c.Name())
		}
	}
	if n < 15 {
		t.Errorf("only %d verbs in the whole tree", n)
	}
}
