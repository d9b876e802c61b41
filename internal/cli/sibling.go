package cli

import (
	"debug/buildinfo"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/forkbomb/forkbomb/internal/sandbox/progfile"
)

// Like git with git-<verb>, the core forkbomb hands what it does not link
// to a sibling binary: the same command line, in place of this process
// (execve: no second process stays, and signals and the exit status are
// the sibling's own).

// fullName is the sibling binary the core hands commands to.
const fullName = "forkbomb-full"

// buildHint is how to get both binaries.
const buildHint = "build both with: CGO_ENABLED=0 go build -o bin/ ./cmd/..."

// fullVerbs are the top-level verbs only forkbomb-full links, with the
// one-line help the core lists for them (the full build's --help says the
// same: TestHelpSame).
var fullVerbs = []struct{ name, short string }{
	{"gateway", "The hosted side: workspaces, balances and a metered model proxy"},
}

// build is what this binary links, and how it hands on what it does not.
type build struct {
	Options
	// handoff runs the whole command line in forkbomb-full instead;
	// what names what needed it, and code is the verb's status when it
	// cannot. It returns only an error.
	handoff func(what string, code int) error
}

// addSubVerbs adds to parent the full build's verbs of table, and a
// hand-off for each one this build lacks.
func addSubVerbs(parent *cobra.Command, stdio IO, verbs []Verb, table []struct{ name, short string }, handoff func(string, int) error) {
	have := map[string]bool{}
	for _, v := range verbs {
		c := v(Kit{IO: stdio})
		have[c.Name()] = true
		parent.AddCommand(c)
	}
	for _, v := range table {
		if have[v.name] {
			continue
		}
		// what the messages name: "gateway", "world mcp"
		what := func(c *cobra.Command) string { return strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ") }
		c := &cobra.Command{
			Use:                v.name,
			Short:              v.short,
			DisableFlagParsing: true, // every flag, --help included, is the sibling's
			RunE: func(c *cobra.Command, _ []string) error {
				return handoff(what(c), ExitFailed)
			},
		}
		// forkbomb help gateway: the sibling's help; its own when the
		// sibling cannot run, with the reason.
		c.SetHelpFunc(func(c *cobra.Command, args []string) {
			err := handoff(what(c), ExitFailed)
			c.Long = v.short + ".\n\n'" + what(c) + "' is in " + fullName + ", which this forkbomb runs in its place."
			c.Parent().HelpFunc()(c, args)
			fmt.Fprintf(stdio.Err, "forkbomb: %v\n", err)
		})
		parent.AddCommand(c)
	}
}

// refuseHandoff is Run's: a command line given as arguments cannot be
// re-executed as this process's own.
func refuseHandoff(what string, code int) error {
	return &exitError{code: code, msg: fmt.Sprintf("%s is not in this build of forkbomb: it is in %s (%s)", what, fullName, buildHint)}
}

// execFull replaces this process by forkbomb-full beside it, with the same
// arguments and environment, once it is known to come from the same build.
func execFull(what string, code int) error {
	fail := func(format string, a ...any) error {
		return &exitError{code: code, msg: fmt.Sprintf("%s needs %s: ", what, fullName) + fmt.Sprintf(format, a...)}
	}
	self, err := os.Executable() // the resolved /proc/self/exe: beside the file, not a link to it
	if err != nil {
		return fail("this binary's path: %v", err)
	}
	full := filepath.Join(filepath.Dir(self), fullName)
	mine, ok := debug.ReadBuildInfo()
	if !ok {
		return fail("this binary has no build information to match %s against", full)
	}
	// The checks the standalone sandbox init passes: a file only its
	// owner (root or this user) can change, as forkbomb itself.
	if err := progfile.Check(full); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fail("%s is not there; %s", full, buildHint)
		}
		return fail("%s not used: %v; %s, and keep %s a plain file, mode 0755", full, err, buildHint, fullName)
	}
	theirs, err := buildinfo.ReadFile(full)
	if err != nil {
		return fail("%s is not a Go build of forkbomb (%v); %s", full, err, buildHint)
	}
	if err := sameBuild(mine, theirs); err != nil {
		return fail("%s is from another build (%v); %s", full, err, buildHint)
	}
	err = syscall.Exec(full, os.Args, os.Environ())
	return fail("exec %s: %v", full, err)
}

// sameBuild checks that theirs is forkbomb-full from the build mine comes
// from: the sibling main package of the same module and version, the same
// Go, the same build settings (vcs.revision, vcs.modified, tags, flags…),
// and the same version of every module both link. Without VCS stamps
// (-buildvcs=false) two builds of changed sources at one commit still
// match: the settings are all a binary records of its source.
func sameBuild(mine, theirs *debug.BuildInfo) error {
	if want := path.Join(path.Dir(mine.Path), fullName); theirs.Path != want {
		return fmt.Errorf("it is %s, not %s", theirs.Path, want)
	}
	if mine.GoVersion != theirs.GoVersion {
		return fmt.Errorf("built by %s, this one by %s", theirs.GoVersion, mine.GoVersion)
	}
	if m, t := mine.Main, theirs.Main; m.Path != t.Path || m.Version != t.Version || m.Sum != t.Sum {
		return fmt.Errorf("module %s %s, this one %s %s", theirs.Main.Path, theirs.Main.Version, mine.Main.Path, mine.Main.Version)
	}
	settings := map[string]string{}
	for _, s := range theirs.Settings {
		settings[s.Key] = s.Value
	}
	for _, s := range mine.Settings {
		if v, ok := settings[s.Key]; !ok || v != s.Value {
			return fmt.Errorf("%s %q, this one %q", s.Key, v, s.Value)
		}
		delete(settings, s.Key)
	}
	for k, v := range settings {
		return fmt.Errorf("%s %q, this one has none", k, v)
	}
	deps := map[string]*debug.Module{}
	for _, d := range theirs.Deps {
		deps[d.Path] = d
	}
	for _, d := range mine.Deps {
		t, ok := deps[d.Path]
		if !ok || t.Version != d.Version || t.Sum != d.Sum || (t.Replace == nil) != (d.Replace == nil) ||
			(t.Replace != nil && *t.Replace != *d.Replace) {
			return fmt.Errorf("it links another %s than %s", d.Path, d.Version)
		}
	}
	return nil
}
