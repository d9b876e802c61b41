// Package internal_test holds the one test of the tree's layering: README.md's
// Development section lists every package, and a package imports only packages below
// it in that list.
package internal_test

import (
	"bufio"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/forkbomb/forkbomb/"

// TestLayering: every package of internal/ is named in README.md's architecture list, and
// each imports only packages named below it; cmd/ mains import only internal/ packages.
func TestLayering(t *testing.T) {
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(self))
	order := readmeOrder(t, filepath.Join(root, "README.md"))
	rank := map[string]int{}
	for i, p := range order {
		rank[p] = i
	}
	imports := packageImports(t, root)
	if len(imports) < 20 {
		t.Fatalf("read only %d packages under %s", len(imports), root)
	}
	for pkg, imps := range imports {
		if strings.HasPrefix(pkg, "cmd/") {
			for _, imp := range imps {
				if !strings.HasPrefix(imp, "internal/") {
					t.Errorf("%s imports %s: a main imports only internal/ packages", pkg, imp)
				}
			}
			continue
		}
		r, ok := rank[pkg]
		if !ok {
			t.Errorf("%s is not in README.md's architecture list", pkg)
			continue
		}
		for _, imp := range imps {
			if ri, ok := rank[imp]; ok && ri <= r {
				t.Errorf("%s imports %s, which README.md lists above it", pkg, imp)
			}
		}
	}
	for _, p := range order {
		if _, ok := imports[p]; !ok {
			t.Errorf("README.md lists %s, which has no package", p)
		}
	}
}

// readmeOrder is the packages of README.md's architecture list, top first: each item's
// backquoted internal/… names before its dash, and its `lab/…`-style sub-package names.
func readmeOrder(t *testing.T, readme string) []string {
	t.Helper()
	f, err := os.Open(readme)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	name := regexp.MustCompile("`(internal/[a-z0-9/]+)`")
	var order []string
	in := false
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "- Architecture"):
			in = true
			continue
		case in && !strings.HasPrefix(line, "  - "):
			in = false
		}
		if !in {
			continue
		}
		head, _, _ := strings.Cut(line, " — ")
		for _, m := range name.FindAllStringSubmatch(head, -1) {
			order = append(order, m[1])
		}
	}
	if len(order) == 0 {
		t.Fatal("README.md has no architecture list")
	}
	return order
}

// packageImports reads every non-test Go file under internal/ and cmd/ and returns each
// package's imports of the module, as paths relative to it.
func packageImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, top := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			pkg := filepath.ToSlash(rel)
			if _, ok := out[pkg]; !ok {
				out[pkg] = nil
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if rest, ok := strings.CutPrefix(path, module); ok && !slices.Contains(out[pkg], rest) {
					out[pkg] = append(out[pkg], rest)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}
