package sandbox

import (
	"runtime/debug"
	"slices"
	"testing"

	"github.com/forkbomb/forkbomb/internal/testutil"
)

// TestFingerprintCoversTheInit: the fingerprint hashes this package's
// sources and the modules listed in linkedModules, so the init's code must
// be exactly those: no import of another package of the module, whose
// sources would not be hashed.
func TestFingerprintCoversTheInit(t *testing.T) {
	t.Parallel()
	testutil.CheckFingerprintSources(t, sources, 40, "github.com/forkbomb/forkbomb/internal/sandbox/progfile")
}

// TestFingerprintModulesListed: every module the package links,
// transitively, is in linkedModules.
func TestFingerprintModulesListed(t *testing.T) {
	t.Parallel()
	testutil.CheckLinkedModules(t, "fingerprint.go", linkedModules)
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
