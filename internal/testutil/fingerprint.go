package testutil

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
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
		if !strings.HasSuffix(name, ".go") {
			return nil // assembly: it imports nothing
		}
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

// CheckImportsOnly checks that the non-test Go files of each folder in dirs import nothing but
// allowed: the guard of a package that must be initialised early in a program's start (Go
// initialises packages in import-path order among those whose imports are done), where one
// import more puts it behind dozens of packages. self, a file of the package, says whether the
// test runs from the source tree; away from it (the unprivileged run) the check is skipped.
func CheckImportsOnly(t *testing.T, self string, dirs, allowed []string) {
	t.Helper()
	if _, err := os.Stat(self); err != nil {
		t.Skip("not run from the source tree; the run from it checks the imports")
	}
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no sources in %s: %v", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, im := range src.Imports {
				if p, _ := strconv.Unquote(im.Path.Value); !slices.Contains(allowed, p) {
					t.Errorf("%s imports %s, which would initialise it later (allowed: %s)", f, p, strings.Join(allowed, " "))
				}
			}
		}
	}
}
