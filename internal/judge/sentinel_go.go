package judge

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"sync"
)

// Go sentinels are a new _test.go file in each package whose tests ran at
// baseline, with the package clause of that package's tests. They are
// compiled with the package's tests, and the -exec wrapper (GOFLAGS, from
// a read-only folder of the judge's) deletes their source from the package
// folder before the compiled test binary runs: code under test that reads
// the test files of its folder finds only the real ones.

var (
	goModuleRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^module\s+("?)([^"\s]+)`) })
	goPackageRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^package\s+([A-Za-z_][A-Za-z0-9_]*)`) })
)

func planGo(tree string, hidden []string, cmd string, base *Results) *sentinelPlan {
	p := &sentinelPlan{runner: "go", files: map[string]string{}}
	mod, ok := readBase(tree, hidden, "go.mod")
	m := goModuleRE().FindSubmatch(mod)
	if !ok || m == nil {
		p.note = "no sentinel tests were placed: no go.mod at the root of the repository"
		return p
	}
	module := string(m[2])
	withTests := map[string]bool{} // packages with a real test at baseline
	pkgs := packagesOf(base)
	for name := range base.Tests {
		for pkg := range pkgs {
			rest, ok := strings.CutPrefix(name, pkg+".")
			if ok && !strings.Contains(strings.SplitN(rest, "/", 2)[0], ".") && !strings.HasSuffix(name, " (package)") {
				withTests[pkg] = true
			}
		}
	}
	testFiles := listBase(tree, hidden, func(rel string) bool { return strings.HasSuffix(rel, "_test.go") }, 20000)
	byDir := map[string][]string{}
	for _, f := range testFiles {
		byDir[path.Dir(f)] = append(byDir[path.Dir(f)], f)
	}
	mustFail := !failsFast(cmd)
	file := pick(adjectives) + "_" + pick(nouns) + "_test.go"
	for pkg := range withTests {
		dir := "."
		if pkg != module {
			rest, ok := strings.CutPrefix(pkg, module+"/")
			if !ok {
				continue
			}
			dir = rest
		}
		clause, text := goClause(tree, hidden, byDir[dir])
		if clause == "" {
			continue
		}
		target := path.Join(dir, file)
		if _, exists := readBase(tree, hidden, target); exists {
			continue
		}
		names := freshNames(3, text, func() string { return "Test" + title(pick(adjectives)) + title(pick(nouns)) })
		if len(names) < 3 {
			continue
		}
		a, b := randInt(3, 90), randInt(3, 90)
		var src strings.Builder
		fmt.Fprintf(&src, "package %s\n\nimport \"testing\"\n", clause)
		for i, n := range names {
			want := a * b
			if i == 1 {
				if !mustFail {
					continue
				}
				want++
				p.list = append(p.list, sentinel{name: pkg + "." + n, mustFail: true, scope: pkg + ".", goPkg: pkg})
			} else {
				p.list = append(p.list, sentinel{name: pkg + "." + n, scope: pkg + "."})
			}
			fmt.Fprintf(&src, "\nfunc %s(t *testing.T) {\n\tif got, want := %d*%d, %d; got != want {\n\t\tt.Fatalf(\"got %%d, want %%d\", got, want)\n\t}\n}\n", n, a, b, want)
		}
		p.files[target] = src.String()
	}
	if len(p.files) > 0 {
		p.wrapper = "#!/bin/sh\n# forkbomb judge: the sentinel tests' source leaves the package folder\n# before its compiled test binary runs.\nrm -f -- ./" + file + "\nexec \"$@\"\n"
	}
	if !mustFail {
		p.note = "only must-pass sentinel tests were placed: the command stops at the first failure (-failfast)"
	}
	return p
}

// packagesOf lists the packages the baseline ran, from go test -json's
// package results.
func packagesOf(r *Results) map[string]bool {
	out := map[string]bool{}
	for name := range r.Tests {
		if pkg, ok := strings.CutSuffix(name, " (package)"); ok {
			out[pkg] = true
		}
	}
	return out
}

// goClause is the package clause of a folder's tests (the package itself
// over an external _test package, which can only see what it imports),
// and the text of all of them, so fresh names avoid theirs.
func goClause(tree string, hidden []string, files []string) (string, string) {
	clause := ""
	var all strings.Builder
	for _, f := range files {
		data, ok := readBase(tree, hidden, f)
		if !ok {
			continue
		}
		all.Write(data)
		m := goPackageRE().FindSubmatch(data)
		if m == nil || strings.Contains(string(data[:min(len(data), 2048)]), "//go:build") {
			continue
		}
		c := string(m[1])
		if clause == "" || strings.HasSuffix(clause, "_test") && !strings.HasSuffix(c, "_test") {
			clause = c
		}
	}
	return clause, all.String()
}
