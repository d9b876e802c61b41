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
// and two more arguments — or a method of a value such a package's
// constructor makes from the test's *testing.T (c := check.New(t);
// c.Equal(x, y)), where the constructor reads New(t T0) R or *R and the
// method (r R or *R) Equal(x, y X) with X interface{} or any, and returns
// nothing.

// goHelper is an equality helper a sentinel can call.
type goHelper struct {
	path, fn string // import path and function (for "method", the method)
	ctor     string // for "method": the package's function making the value from t
	label    string // as the note names it
	kind     string // "t-eq": fn(t, x, y) reports; "diff": fn(x, y) is "" when equal; "method": ctor(t).fn(x, y) reports
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
		// made reads ctor(t, …), a call of a module package's function with
		// one of the file's *testing.T first: its import path and the
		// function (goMethodShape decides whether ctor(t) alone compiles).
		made := func(e ast.Expr) (string, string, bool) {
			call, ok := e.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return "", "", false
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return "", "", false
			}
			x, ok := sel.X.(*ast.Ident)
			arg, isIdent := call.Args[0].(*ast.Ident)
			if !ok || !isIdent || !tParams[arg.Name] || !strings.HasPrefix(imports[x.Name], module+"/") {
				return "", "", false
			}
			return imports[x.Name], sel.Sel.Name, true
		}
		// checkers are the names the file gives such values (c :=
		// check.New(t)), by name: a name given two makers is no one's.
		checkers := map[string][2]string{}
		ast.Inspect(file, func(n ast.Node) bool {
			var lhs, rhs []ast.Expr
			switch a := n.(type) {
			case *ast.AssignStmt:
				lhs, rhs = a.Lhs, a.Rhs
			case *ast.ValueSpec:
				for _, id := range a.Names {
					lhs = append(lhs, id)
				}
				rhs = a.Values
			default:
				return true
			}
			if len(lhs) != len(rhs) {
				return true
			}
			for i, l := range lhs {
				id, ok := l.(*ast.Ident)
				if !ok {
					continue
				}
				p, ctor, ok := made(rhs[i])
				if prev, seen := checkers[id.Name]; seen && (!ok || prev != [2]string{p, ctor}) {
					checkers[id.Name] = [2]string{}
				} else if ok && !seen {
					checkers[id.Name] = [2]string{p, ctor}
				}
			}
			return true
		})
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			// a method of a value made by the module's constructor
			if len(call.Args) == 2 && !call.Ellipsis.IsValid() && goEqualName(sel.Sel.Name) {
				var p, ctor, name string
				if id, ok := sel.X.(*ast.Ident); ok && checkers[id.Name][1] != "" {
					p, ctor, name = checkers[id.Name][0], checkers[id.Name][1], id.Name
				} else if mp, mc, ok := made(sel.X); ok {
					p, ctor, name = mp, mc, "…"
				}
				if ctor != "" {
					key := p + "." + ctor + "()." + sel.Sel.Name
					if !seen[key] {
						seen[key] = true
						label := name + "." + sel.Sel.Name + " (" + path.Base(p) + "." + ctor + ")"
						if goMethodShape(tree, hidden, strings.TrimPrefix(p, module+"/"), ctor, sel.Sel.Name) {
							found[key] = goHelper{path: p, fn: sel.Sel.Name, ctor: ctor, label: label, kind: "method"}
						} else {
							skipped = append(skipped, label+" (its declarations do not read New(t) R and (R) Equal(x, y any))")
						}
					}
					return true
				}
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
	fd := goDecl(tree, hidden, dir, func(fd *ast.FuncDecl) bool { return fd.Recv == nil && fd.Name.Name == fn })
	if fd == nil {
		return false
	}
	typeParams := map[string]string{} // name → constraint
	if fd.Type.TypeParams != nil {
		for _, f := range fd.Type.TypeParams.List {
			for _, n := range f.Names {
				typeParams[n.Name] = goTypeString(f.Type)
			}
		}
	}
	params := goParamTypes(fd.Type)
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

// goDecl is the one function declaration of the package folder dir that
// is (nil if none, or several, or one in a file not built everywhere, or a
// file that does not parse).
func goDecl(tree string, hidden []string, dir string, is func(*ast.FuncDecl) bool) *ast.FuncDecl {
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
			return nil
		}
		for _, d := range file.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && is(fd) {
				if goConstrained(f, data) {
					return nil // built on some platforms only
				}
				decls = append(decls, fd)
			}
		}
	}
	if len(decls) != 1 {
		return nil
	}
	return decls[0]
}

// goMethodShape reads, in the package folder dir, the declarations of ctor
// and of the method fn of what it returns: func ctor(t T0) R or *R (one
// parameter, or a second that is variadic; no type parameters), R a type
// name, and func (r R or *R) fn(x, y X, rest ...R2) with X interface{} or
// any and no results. The suite's own calls show *testing.T is a T0; the
// sentinels call it as c := ctor(t); c.fn(x, y), with comparable values.
// A method R gets from a field it embeds is not found, so not called.
func goMethodShape(tree string, hidden []string, dir, ctor, fn string) bool {
	c := goDecl(tree, hidden, dir, func(fd *ast.FuncDecl) bool { return fd.Recv == nil && fd.Name.Name == ctor })
	if c == nil || c.Type.TypeParams != nil || c.Type.Results == nil || len(c.Type.Results.List) != 1 || len(c.Type.Results.List[0].Names) > 1 {
		return false
	}
	params := goParamTypes(c.Type)
	if len(params) < 1 || len(params) > 2 {
		return false
	}
	if len(params) == 2 {
		if _, ok := params[1].(*ast.Ellipsis); !ok {
			return false
		}
	}
	recvName := func(e ast.Expr) string {
		if st, ok := e.(*ast.StarExpr); ok {
			e = st.X
		}
		if id, ok := e.(*ast.Ident); ok {
			return id.Name
		}
		return "" // a generic type, another package's: not read
	}
	r := recvName(c.Type.Results.List[0].Type)
	if r == "" {
		return false
	}
	m := goDecl(tree, hidden, dir, func(fd *ast.FuncDecl) bool {
		return fd.Recv != nil && len(fd.Recv.List) == 1 && fd.Name.Name == fn && recvName(fd.Recv.List[0].Type) == r
	})
	if m == nil || (m.Type.Results != nil && len(m.Type.Results.List) > 0) {
		return false
	}
	params = goParamTypes(m.Type)
	if len(params) < 2 || len(params) > 3 {
		return false
	}
	if len(params) == 3 {
		if _, ok := params[2].(*ast.Ellipsis); !ok {
			return false
		}
	}
	x, y := goTypeString(params[0]), goTypeString(params[1])
	return x == y && (x == "interface{}" || x == "any")
}

// goParamTypes lists a function's parameter types, one per parameter.
func goParamTypes(ft *ast.FuncType) []ast.Expr {
	var params []ast.Expr
	for _, f := range ft.Params.List {
		for range max(len(f.Names), 1) {
			params = append(params, f.Type)
		}
	}
	return params
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
