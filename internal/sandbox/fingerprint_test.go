package sandbox

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestFingerprintCoversTheInit: the fingerprint hashes this package's
// sources and the modules listed in linkedModules, so the init's code must
// be exactly those: no import of another package of the module, whose
// sources would not be hashed.
func TestFingerprintCoversTheInit(t *testing.T) {
	t.Parallel()
	entries, err := sources.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	hashed := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		hashed++
		data, _ := sources.ReadFile(e.Name())
		f, err := parser.ParseFile(token.NewFileSet(), e.Name(), data, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "github.com/forkbomb/forkbomb/") {
				t.Errorf("%s imports %s: its code would not be in the fingerprint", e.Name(), path)
			}
		}
	}
	if hashed < 40 {
		t.Errorf("only %d sources embedded", hashed)
	}
}

// TestFingerprintModulesListed: every module the package links,
// transitively, is in linkedModules — which only the go tool knows, and
// only in the source tree (the unprivileged run, away from it, has the
// root run's word for it).
func TestFingerprintModulesListed(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("fingerprint.go"); err != nil {
		t.Skip("not run from the source tree; the run from it checks the linked modules")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var mods []string
	for _, m := range strings.Fields(string(out)) {
		if m != "github.com/forkbomb/forkbomb" && !slices.Contains(mods, m) {
			mods = append(mods, m)
		}
	}
	slices.Sort(mods)
	if !slices.Equal(mods, linkedModules) {
		t.Errorf("the package links modules %q; linkedModules lists %q", mods, linkedModules)
	}
}

// TestFingerprintSeesModules: a linked module's version is part of it,
// except for a parent that knows none (a test binary, like this one).
func TestFingerprintSeesModules(t *testing.T) {
	t.Parallel()
	deps := func(sys string) []*debug.Module {
		var d []*debug.Module
		for _, m := range linkedModules {
			d = append(d, &debug.Module{Path: m, Version: "v1.0.0", Sum: "h1:x"})
		}
		d[slices.Index(linkedModules, "golang.org/x/sys")].Version = sys
		return d
	}
	a, b, none := fingerprintOf(sources, deps("v0.50.0")), fingerprintOf(sources, deps("v0.51.0")), fingerprintOf(sources, nil)
	for _, c := range []struct {
		parent, own string
		same        bool
	}{
		{a, a, true},
		{a, b, false},    // another x/sys
		{none, a, true},  // a test binary as the parent
		{a, none, false}, // an init without a module list
		{a, "garbage", false},
		{"", a, false},
	} {
		if got := sameBuild(c.parent, c.own); got != c.same {
			t.Errorf("sameBuild(%q, %q) = %t", c.parent, c.own, got)
		}
	}
	var linked []*debug.Module
	if bi, ok := debug.ReadBuildInfo(); ok {
		linked = bi.Deps // none in a test binary today
	}
	if fingerprintOf(sources, linked) != Fingerprint() {
		t.Error("the fingerprint is not a function of the sources and modules")
	}
}

// BenchmarkFingerprint is what a process pays, once, to know its own.
func BenchmarkFingerprint(b *testing.B) {
	bi, _ := debug.ReadBuildInfo()
	for b.Loop() {
		fingerprintOf(sources, bi.Deps)
	}
}
