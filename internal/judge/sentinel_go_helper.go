package judge

import (
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"path"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// A Go sentinel that does not compile fails its whole package — an honest
// fix with it — so the sentinels call an assertion helper of the suite only
// when its signature is certain: a library whose signature is known
// (testify's Equal, go-cmp's Diff), or a function of a package in the
// module whose declaration reads (t, x, y) with x and y both interface{}
// or both one type parameter, called by a test file of the same package
// clause (so importing it makes no cycle) with the test's own *testing.T
// and two more arguments.

// goHelper is an equality helper a sentinel can call.
type goHelper struct {
	path, fn string // import path and function
	label    string // as the note names it
	kind     string // "t-eq": fn(t, x, y) reports; "diff": fn(x, y) is "" when equal
	anyKind  bool   // takes slices and maps too: a project's helper may compare with ==, which panics on them
}

// goKnown are helpers of libraries whose signatures do not vary.
var goKnown = map[string]goHelper{
	"github.com/stretchr/testify/assert.Equal":  {kind: "t-eq", anyKind: true},
	"github.com/stretchr/testify/require.Equal": {kind: "t-eq", anyKind: true},
	"github.com/google/go-cmp/cmp.Diff":         {kind: "diff", anyKind: true},
	"gotest.tools/v3/assert.Equal":              {kind: "t-eq"}, // compares with ==
}

// goHelpers finds the helpers the test files of one package clause call,
// and says which it left out and why.
func goHelpers(tree string, hidden []string, module, clause string, files []string) ([]goHelper, []string) {
	found := map[string]goHelper{}
	var skipped []string
	seen := map[string]bool{}
	for _, f := range files {
		data, ok := readBase(tree, hidden, f)
		if !ok {
			continue
		}
		if goConstrained(f, data) {
			continue // what it imports may not be built with the package's tests
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, f, data, parser.SkipObjectResolution)
		if err != nil || file.Name.Name != clause {
			continue
		}
		imports := map[string]string{} // local name → path
		testingName := ""
		for _, im := range file.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			name := path.Base(p)
			if im.Name != nil {
				name = im.Name.Name
			}
			if p == "testing" {
				testingName = name
			}
			imports[name] = p
		}
		if testingName == "" {
			continue
		}
		tParams := goTParams(file, testingName)
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok || imports[x.Name] == "" {
				return true
			}
			p, fn := imports[x.Name], sel.Sel.Name
			key := p + "." + fn
			if seen[key] {
				return true
			}
			if h, ok := goKnown[key]; ok {
				seen[key] = true
				h.path, h.fn, h.label = p, fn, x.Name+"."+fn
				found[key] = h
				return true
			}
			if !goEqualName(fn) || !strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
				return true // not an equality helper, or the standard library's
			}
			if !strings.HasPrefix(p, module+"/") {
				seen[key] = true
				skipped = append(skipped, x.Name+"."+fn+" (of a library the judge does not know)")
				return true
			}
			seen[key] = true
			first, isIdent := ast.Expr(nil), false
			if len(call.Args) > 0 {
				first = call.Args[0]
				id, ok := first.(*ast.Ident)
				isIdent = ok && tParams[id.Name]
			}
			if len(call.Args) != 3 || !isIdent || call.Ellipsis.IsValid() {
				skipped = append(skipped, x.Name+"."+fn+" (not called as f(t, x, y))")
				return true
			}
			if !goHelperShape(tree, hidden, strings.TrimPrefix(p, module+"/"), fn) {
				skipped = append(skipped, x.Name+"."+fn+" (its declaration does not read f(t, x, y any))")
				return true
			}
			found[key] = goHelper{path: p, fn: fn, label: x.Name + "." + fn, kind: "t-eq"}
			return true
		})
	}
	var out []goHelper
	for _, h := range found {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path+out[i].fn < out[j].path+out[j].fn })
	sort.Strings(skipped)
	return out, skipped
}

// goEqualName says a helper's name means an equality assertion.
func goEqualName(fn string) bool {
	l := strings.ToLower(fn)
	return (strings.Contains(l, "equal") || l == "eq") && !strings.Contains(l, "not")
}

// goTParams are the names a file declares as parameters of type *testing.T.
func goTParams(file *ast.File, testingName string) map[string]bool {
	out := map[string]bool{}
	ast.Inspect(file, func(n ast.Node) bool {
		var ft *ast.FuncType
		switch f := n.(type) {
		case *ast.FuncDecl:
			ft = f.Type
		case *ast.FuncLit:
			ft = f.Type
		default:
			return true
		}
		for _, field := range ft.Params.List {
			if goIsTestingT(field.Type, testingName) {
				for _, name := range field.Names {
					out[name.Name] = true
				}
			}
		}
		return true
	})
	return out
}

func goIsTestingT(e ast.Expr, testingName string) bool {
	star, ok := e.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == testingName && sel.Sel.Name == "T"
}

// goHelperShape reads the declaration of fn in the package folder dir: it
// must be declared once, as func fn[...](t T0, x, y X, rest ...R) with X
// interface{} or any, or a type parameter constrained by any, comparable
// or interface{}, in a file built on every platform; T0 is whatever the
// suite's own calls show *testing.T satisfies. The sentinels pass it only
// comparable values.
func goHelperShape(tree string, hidden []string, dir, fn string) bool {
	var decls []*ast.FuncDecl
	for _, f := range listBase(tree, hidden, func(rel string) bool {
		return path.Dir(rel) == dir && strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go")
	}, 200) {
		data, ok := readBase(tree, hidden, f)
		if !ok {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, data, parser.SkipObjectResolution)
		if err != nil {
			return false
		}
		for _, d := range file.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == fn {
				if goConstrained(f, data) {
					return false // built on some platforms only
				}
				decls = append(decls, fd)
			}
		}
	}
	if len(decls) != 1 {
		return false
	}
	fd := decls[0]
	typeParams := map[string]string{} // name → constraint
	if fd.Type.TypeParams != nil {
		for _, f := range fd.Type.TypeParams.List {
			for _, n := range f.Names {
				typeParams[n.Name] = goTypeString(f.Type)
			}
		}
	}
	var params []ast.Expr
	for _, f := range fd.Type.Params.List {
		n := max(len(f.Names), 1)
		for range n {
			params = append(params, f.Type)
		}
	}
	if len(params) < 3 || len(params) > 4 {
		return false
	}
	if len(params) == 4 {
		if _, ok := params[3].(*ast.Ellipsis); !ok {
			return false
		}
	}
	x, y := goTypeString(params[1]), goTypeString(params[2])
	if x != y {
		return false
	}
	switch c, isParam := typeParams[x]; {
	case x == "interface{}" || x == "any":
	case isParam && (c == "any" || c == "interface{}" || c == "comparable"):
	default:
		return false
	}
	return true
}

// goTypeString is a type expression's text, for the few forms compared.
func goTypeString(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.InterfaceType:
		if len(t.Methods.List) == 0 {
			return "interface{}"
		}
	}
	return "?"
}

// goConstrained says a file has a build constraint or a GOOS/GOARCH
// suffix, or uses cgo: it may not be built where the judge builds.
func goConstrained(name string, data []byte) bool {
	if strings.Contains(string(data), "import \"C\"") {
		return true
	}
	// a build constraint this machine's go test (no -tags) may not meet:
	// judged here, a file is built when its line holds for this GOOS and
	// GOARCH, unix, gc and the go1.N releases; any other tag is taken as
	// unset (a file of -tags integration is left out, as before)
	for _, line := range strings.Split(string(data[:min(len(data), 4096)]), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "package ") {
			break
		}
		if !constraint.IsGoBuild(line) && !constraint.IsPlusBuild(line) {
			continue
		}
		expr, err := constraint.Parse(line)
		if err != nil || !expr.Eval(goTagHere) {
			return true
		}
	}
	parts := strings.Split(strings.TrimSuffix(path.Base(name), ".go"), "_")
	for _, p := range parts[1:] {
		if goOSArch[p] && p != runtime.GOOS && p != runtime.GOARCH {
			return true
		}
	}
	return false
}

// goTagHere says whether go test here, with no -tags, sets a build tag.
func goTagHere(tag string) bool {
	switch {
	case tag == runtime.GOOS, tag == runtime.GOARCH, tag == "gc":
		return true
	case tag == "unix":
		return runtime.GOOS != "windows" && runtime.GOOS != "plan9" && runtime.GOOS != "js" && runtime.GOOS != "wasip1"
	case strings.HasPrefix(tag, "go1."):
		n, err := strconv.Atoi(strings.TrimPrefix(tag, "go1."))
		return err == nil && n <= goMinor()
	}
	return false
}

// goMinor is the minor version of the Go this forkbomb was built with,
// which the judged go test's is taken to be at least (go1.N tags up to
// it are set).
var goMinor = sync.OnceValue(func() int {
	v := strings.TrimPrefix(runtime.Version(), "go1.")
	v, _, _ = strings.Cut(v, ".")
	n, _ := strconv.Atoi(v)
	return n
})

var goOSArch = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields("aix android darwin dragonfly freebsd hurd illumos ios js linux nacl netbsd openbsd plan9 solaris wasip1 windows zos " +
		"386 amd64 amd64p32 arm armbe arm64 arm64be loong64 mips mipsle mips64 mips64le mips64p32 mips64p32le ppc ppc64 ppc64le riscv riscv64 s390 s390x sparc sparc64 wasm") {
		m[w] = true
	}
	return m
}()
