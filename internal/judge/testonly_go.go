package judge

import (
	"go/build/constraint"
	"go/parser"
	"go/token"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Go: a package is test-only when
//   - it is no module's root and no command (package main),
//   - users of the module cannot import it: a path element is "internal"
//     (the go command refuses the import from outside), or every package
//     clause of its non-test files is a test helper's name (helperName, or
//     a name ending in "test" like iotest and httptest),
//   - at least one file outside its folder imports it, and every such file
//     is a _test.go file, a file the default patterns strip (test/, e2e/…),
//     or a file of another test-only package.
//
// The tests of the package itself (in its folder) count for neither side:
// a package only its own tests import is code under test. A public package
// only tests import (go-cmp's cmp/cmpopts) is kept: users import it.
// Imports are read with go/parser's ImportsOnly from each file's head; a
// non-test file whose imports cannot be read whole is taken to import
// every package whose path its text names, and one that cannot be read at
// all stops the Go analysis (nothing more is stripped).

// goPkgInfo is one folder's package.
type goPkgInfo struct {
	dir, path, modDir string
	names             map[string]bool // package clauses of the non-test files
	importers         []goImporter    // files outside dir that import it
}

type goImporter struct {
	dir      string
	testSide bool // a _test.go file or a stripped file
}

// testOnlyGo returns the folders of the tree's test-only Go packages.
func testOnlyGo(r *treeReader, files []string) []string {
	mods := map[string]string{} // module folder -> module path
	for _, f := range files {
		if path.Base(f) != "go.mod" {
			continue
		}
		data, _, ok := r.read(f, 1<<20)
		if !ok {
			continue
		}
		if mp := modulePath(data); mp != "" {
			mods[dirOf(f)] = mp
		}
	}
	if len(mods) == 0 {
		return nil
	}
	pkgs := map[string]*goPkgInfo{} // by folder
	byPath := map[string][]string{} // import path -> folders
	type goFile struct {
		rel, dir string
		imports  []string
		opaque   []byte // text of a non-test file whose imports could not be parsed
	}
	var gofiles []goFile
	fset := token.NewFileSet()
	for _, f := range files {
		if path.Ext(f) != ".go" || goIgnored(f) {
			continue
		}
		dir := dirOf(f)
		modDir, ok := nearestModule(mods, dir)
		if !ok {
			continue
		}
		isTest := strings.HasSuffix(f, "_test.go")
		data, whole, ok := r.read(f, goHead)
		if !ok {
			if isTest {
				continue
			}
			return nil
		}
		af, err := parser.ParseFile(fset, f, data, parser.ImportsOnly)
		if err != nil && !whole && !isTest {
			if data, whole, ok = r.read(f, 16<<20); !ok || !whole {
				return nil
			}
			af, err = parser.ParseFile(fset, f, data, parser.ImportsOnly)
		}
		gf := goFile{rel: f, dir: dir}
		if af != nil {
			for _, s := range af.Imports {
				if p, err := strconv.Unquote(s.Path.Value); err == nil {
					gf.imports = append(gf.imports, p)
				}
			}
		}
		if err != nil && !isTest {
			gf.opaque = append([]byte(nil), data...)
		}
		gofiles = append(gofiles, gf)
		p := pkgs[dir]
		if p == nil {
			p = &goPkgInfo{dir: dir, modDir: modDir, path: joinImport(mods[modDir], modDir, dir), names: map[string]bool{}}
			pkgs[dir] = p
			byPath[p.path] = append(byPath[p.path], dir)
		}
		if !isTest && !goBuildIgnored(data) {
			name := ""
			if af != nil && af.Name != nil {
				name = af.Name.Name
			}
			p.names[name] = true
		}
	}
	folders := map[string]bool{}
	for _, gf := range gofiles {
		imports := gf.imports
		if gf.opaque != nil {
			for ip := range byPath {
				if strings.Contains(string(gf.opaque), strconv.Quote(ip)) {
					imports = append(imports, ip)
				}
			}
		}
		// test side: a _test.go file, or one in a stripped folder (e2e/);
		// a file such as foo-test.go is stripped, but it is built with
		// the package: its imports are the package's
		side := strings.HasSuffix(gf.rel, "_test.go") || inTestFolder(folders, gf.dir)
		for _, ip := range imports {
			for _, dir := range byPath[ip] {
				if dir != gf.dir {
					pkgs[dir].importers = append(pkgs[dir].importers, goImporter{dir: gf.dir, testSide: side})
				}
			}
		}
	}
	// the least fixpoint: a package joins once all its importers are test
	// side; an import cycle never does
	testOnly := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for dir, p := range pkgs {
			if testOnly[dir] || !p.candidate() || len(p.importers) == 0 {
				continue
			}
			all := true
			for _, im := range p.importers {
				if !im.testSide && !testOnly[im.dir] {
					all = false
					break
				}
			}
			if all {
				testOnly[dir] = true
				changed = true
			}
		}
	}
	var out []string
	for dir := range testOnly {
		out = append(out, dir)
	}
	sort.Strings(out)
	return out
}

// candidate says whether users of the module cannot import the package.
func (p *goPkgInfo) candidate() bool {
	if p.dir == p.modDir || len(p.names) == 0 || p.names["main"] || p.names[""] {
		return false
	}
	for _, el := range strings.Split(p.path, "/") {
		if el == "internal" {
			return true
		}
	}
	for name := range p.names {
		if !goHelperName(name) {
			return false
		}
	}
	return true
}

// goBuildIgnored: a file whose build constraint leaves it out of every
// build (//go:build ignore: a generator run by go:generate, often package
// main beside the package it writes for), so its package clause says
// nothing of the folder's package.
func goBuildIgnored(data []byte) bool {
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "package ") {
			return false
		}
		if !constraint.IsGoBuild(line) {
			continue
		}
		expr, err := constraint.Parse(line)
		if err != nil {
			return false
		}
		mentions := false
		built := expr.Eval(func(tag string) bool {
			mentions = mentions || tag == "ignore"
			return tag != "ignore"
		})
		return mentions && !built
	}
	return false
}

// goHelperName: a test helper's package name. "...test" names (iotest,
// httptest, fstest) count, but not the English words that end so.
func goHelperName(name string) bool {
	if helperName(name) {
		return true
	}
	n := strings.ToLower(name)
	if !strings.HasSuffix(n, "test") || len(n) <= len("test") {
		return false
	}
	switch n {
	case "latest", "contest", "attest", "detest", "protest", "pretest", "greatest", "fastest", "shortest",
		"hottest", "softest", "brightest", "tightest", "smartest", "lightest", "slightest", "earnest":
		return false
	}
	return true
}

// goIgnored: files the go command never builds as part of a package —
// under testdata, or a folder whose name starts with "." or "_".
func goIgnored(rel string) bool {
	for _, el := range strings.Split(dirOf(rel), "/") {
		if el == "testdata" || strings.HasPrefix(el, ".") || strings.HasPrefix(el, "_") {
			return true
		}
	}
	return false
}

// nearestModule is the folder of the go.mod that owns dir.
func nearestModule(mods map[string]string, dir string) (string, bool) {
	for d := dir; ; d = dirOf(d) {
		if _, ok := mods[d]; ok {
			return d, true
		}
		if d == "" {
			return "", false
		}
	}
}

func joinImport(mod, modDir, dir string) string {
	if dir == modDir {
		return mod
	}
	rel := dir
	if modDir != "" {
		rel = strings.TrimPrefix(dir, modDir+"/")
	}
	return mod + "/" + rel
}

// modulePath reads the module directive of a go.mod.
func modulePath(data []byte) string {
	for _, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "//")
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "module" {
			if p, err := strconv.Unquote(f[1]); err == nil {
				return p
			}
			return f[1]
		}
	}
	return ""
}
