package testutil

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// CheckFingerprintSources checks a build fingerprint's embedded sources (internal/sandbox's,
// internal/world's), subfolders included: at least min files that are not tests, none
// importing a package of the module other than allowed (covered otherwise: embedded as a
// subfolder, or by the sandbox's fingerprint) — whose code the fingerprint would not cover.
func CheckFingerprintSources(t *testing.T, src fs.ReadDirFS, min int, allowed ...string) {
	t.Helper()
	hashed := 0
	err := fs.WalkDir(src, ".", func(name string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || strings.HasSuffix(name, "_test.go") {
			return err
		}
		hashed++
		data, err := fs.ReadFile(src, name)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, data, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "github.com/forkbomb/forkbomb/") && !slices.Contains(allowed, path) {
				t.Errorf("%s imports %s: its code would not be in the fingerprint", name, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if hashed < min {
		t.Errorf("only %d sources embedded", hashed)
	}
}

// CheckLinkedModules checks that listed, sorted, are the modules the package in the working
// folder links, transitively — which only the go tool knows, and only in the source tree (the
// unprivileged run, away from it, has the root run's word for it: the check is skipped there,
// named by a file of the package, self).
func CheckLinkedModules(t *testing.T, self string, listed []string) {
	t.Helper()
	if _, err := os.Stat(self); err != nil {
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
	if !slices.Equal(mods, listed) {
		t.Errorf("the package links modules %q; its list has %q", mods, listed)
	}
}
