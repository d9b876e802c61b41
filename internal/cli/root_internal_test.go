package cli

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
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

// TestHelpSaysExitStatuses: every verb's help ends with its exit statuses — written into it
// when help is shown, not at each start — however the help is asked for: VERB --help, or help
// VERB. (A tree whose help skipped the writing would print none: the control, the tree as
// built, holds none.)
func TestHelpSaysExitStatuses(t *testing.T) {
	t.Parallel()
	b := build{handoff: refuseHandoff}
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			p := append(append([]string{}, path...), sub.Name())
			if sub.Runnable() && sub.Name() != "help" && sub.Name() != "completion" && !handedOn(p) {
				paths = append(paths, p)
			}
			walk(sub, p)
		}
	}
	all := newRootCmd(IO{Out: io.Discard, Err: io.Discard}, b, nil)
	walk(all, nil)
	if len(paths) < 30 {
		t.Fatalf("only %d verbs in the whole tree", len(paths))
	}
	if c, _, err := all.Find([]string{"world", "fork"}); err != nil || strings.Contains(c.Long, "Exit status") {
		t.Errorf("world fork: its help says its exit statuses before help was asked for (%v)", err)
	}
	for _, p := range paths {
		for _, args := range [][]string{append(append([]string{}, p...), "--help"), append([]string{"help"}, p...)} {
			var out strings.Builder
			code := runLine(context.Background(), args, IO{Out: &out, Err: io.Discard}, b)
			if code != 0 || !strings.Contains(out.String(), "\n\nExit status: ") {
				t.Errorf("forkbomb %s: exit %d, no exit statuses in:\n%s", strings.Join(args, " "), code, out.String())
			}
		}
	}
}

// handedOn: the core hands the verb at path to forkbomb-full, whose help it is.
func handedOn(path []string) bool {
	table := fullVerbs
	if len(path) == 2 && path[0] == "world" {
		table, path = fullWorldVerbs, path[1:]
	}
	for _, v := range table {
		if len(path) == 1 && v.name == path[0] {
			return true
		}
	}
	return false
}
