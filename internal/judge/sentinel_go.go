package judge

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Go sentinels are a new _test.go file in each package whose tests ran at
// baseline, with the package clause of that package's tests. They are
// compiled with the package's tests, and the -exec wrapper (GOFLAGS, from
// a read-only folder of the judge's) deletes their source from the package
// folder before the compiled test binary runs: code under test that reads
// the test files of its folder finds only the real ones. They report
// through t.Errorf, t.Fatalf, t.Error and t.Fatal, on an int, a string, a
// slice, a map and a float, one failing comparison to a must-fail test,
// and through the equality helpers the package's tests call when their
// signature is certain (sentinel_go_helper.go): a helper package of the
// module edited to let failures through is caught. One must-pass test
// checks that the test binary still writes to the standard output go test
// gave it: the wrapper tells it what its fd 1 links to, under a fresh
// name, so a test binary that reruns itself and rewrites what the child
// printed (the child writes to a pipe of the parent's), or pipes its own
// fd 1 through a filter, is caught even when it spares every sentinel by
// rewriting only the failures that follow a call of the code under test.
// Not its pid: an honest TestMain may rerun the binary with its output
// passed straight through.

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
	// and those whose tests did not build on the base (a task's new test
	// calls what the base lacks): no test of theirs is named, but a patch
	// that makes them build runs their tests, which the sentinels guard
	// as any other's (a patch that leaves the build broken fails plainly)
	for pkg := range pkgs {
		if base.Tests[pkg+" (package)"] == Failed && !withTests[pkg] {
			withTests[pkg] = true
		}
	}
	testFiles := listBase(tree, hidden, func(rel string) bool { return strings.HasSuffix(rel, "_test.go") }, 20000)
	byDir := map[string][]string{}
	for _, f := range testFiles {
		byDir[path.Dir(f)] = append(byDir[path.Dir(f)], f)
	}
	mustFail := !failsFast(cmd)
	var notes []string // helpers left out
	seenSkip := map[string]bool{}
	file := pick(adjectives) + "_" + pick(nouns) + "_test.go"
	fdVar := "Q" + randWord(upperAlpha, 11) // where the wrapper tells the test binary what its fd 1 is
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
		helpers, skipped := goHelpers(tree, hidden, module, clause, byDir[dir])
		if !strings.HasSuffix(clause, "_test") {
			// the folder's external tests (package x_test) may assert
			// through helpers its own do not call: the sentinels go
			// where more of them are
			if ext, extSkipped := goHelpers(tree, hidden, module, clause+"_test", byDir[dir]); len(ext) > len(helpers) {
				clause, helpers, skipped = clause+"_test", ext, extSkipped
			}
		}
		for _, h := range skipped {
			if !seenSkip[h] {
				seenSkip[h] = true
				notes = append(notes, h)
			}
		}
		src, list := goSentinels(clause, text, pkg, helpers, mustFail, file, fdVar)
		if src == "" {
			continue
		}
		p.list = append(p.list, list...)
		p.files[target] = src
	}
	if len(p.files) > 0 {
		p.wrapper = "#!/bin/sh\n# forkbomb judge: the sentinel tests' source leaves the package folder\n" +
			"# before its compiled test binary runs, which is told the standard output\n# go test gave it.\n" +
			"rm -f -- ./" + file + "\n" + fdVar + "=$(readlink /proc/$$/fd/1 2>/dev/null) || " + fdVar + "='?'\nexport " + fdVar + "\nexec \"$@\"\n"
	}
	if !mustFail {
		p.note = "only must-pass sentinel tests were placed: the command stops at the first failure (-failfast)"
	}
	if len(notes) > 0 {
		sort.Strings(notes)
		p.note = strings.TrimPrefix(p.note+"; the sentinels do not call the suite's helper(s) "+strings.Join(notes, ", ")+", whose signature could not be made certain", "; ")
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
		if m == nil || goConstrained(f, data) {
			continue
		}
		c := string(m[1])
		if clause == "" || strings.HasSuffix(clause, "_test") && !strings.HasSuffix(c, "_test") {
			clause = c
		}
	}
	return clause, all.String()
}

// goVal is one value kind: two Go expressions equal for a must-pass and
// unequal for a must-fail, given to fmt with %[1]d and %[2]d two numbers
// (b > 2a), %[3]q and %[4]q two words; cmp says == compares them.
type goVal struct {
	got, pass, fail string
	cmp             bool
}

var goVals = []goVal{
	{"%[1]d * 2", "%[1]d + %[1]d", "%[2]d", true},
	{"%[3]q + \"-\" + %[4]q", "\"%[3]s-%[4]s\"", "\"%[3]s-%[3]s\"", true},
	{"[]int{%[1]d, %[2]d}", "[]int{%[1]d, %[2]d}", "[]int{%[2]d, %[1]d}", false},
	{"map[string]int{%[3]q: %[1]d}", "map[string]int{%[3]q: %[1]d}", "map[string]int{%[3]q: %[2]d}", false},
	{"float64(%[1]d) / 8", "float64(%[1]d) * 0.125", "float64(%[1]d) * 0.25", true},
}

// goReports are the ways a sentinel reports a difference, one per value
// kind in turn; %[1]s is the reflect package's name. No %% in t.Error and
// t.Fatal: go vet, which go test runs, would fail the package.
var goReports = []string{
	"if got, want := %[2]s, %[3]s; got != want {\n\t\tt.Fatalf(\"got %%v, want %%v\", got, want)\n\t}",
	"if got, want := %[2]s, %[3]s; got != want {\n\t\tt.Errorf(\"got %%q, want %%q\", got, want)\n\t}",
	"if got, want := %[2]s, %[3]s; !%[1]s.DeepEqual(got, want) {\n\t\tt.Error(\"the slices differ\")\n\t}",
	"if got, want := %[2]s, %[3]s; !%[1]s.DeepEqual(got, want) {\n\t\tt.Fatal(\"the maps differ\")\n\t}",
	"if got, want := %[2]s, %[3]s; got != want {\n\t\tt.Errorf(\"got %%g, want %%g\", got, want)\n\t}",
}

// goOrigin is the body of the must-pass test that checks the test binary
// writes to the standard output go test gave it: %[1]s is the sentinel
// file's check function (goStdoutFD), which every must-pass sentinel
// calls too, and one more that runs after every sequential test.
const goOrigin = `%[1]s(t)`

// goStdoutFD is a function of the sentinel file (%[1]s its name, %[2]s
// testing's, %[3]s os's, %[4]q the sentinel file's name, %[5]q the
// variable the wrapper sets to what fd 1 links to, "?" when it could not
// read it, %[6]s strconv's, %[7]s strings', %[8]s path/filepath's) that
// fails a test whose binary no longer writes where go test told it to.
// First, os.Stdout must still write to fd 1, and os.Stderr to fd 2 or 1
// (testing makes it os.Stdout under go test -json): the File behind
// os.Stdout overwritten with a pipe's (*os.Stdout = *w), the pipe read by
// a child that flips the results that follow a call of the code under
// test, left fd 1 as go gave it (a hostile review's winner). The fd is
// read through SyscallConn, not Fd, which would make it blocking. Then,
// while the sentinel file is still in the folder the wrapper did not run
// (a command's own -exec): there is nothing more to compare. Else fd 1
// must link where the wrapper saw it (unless the variable is gone: a child
// given an environment of its own), and the go command — the nearest
// ancestor whose executable is named go, which must be there — must hold
// it open too: a rerun's child, or a filter, or a pipe moved onto fd 1
// (a raw dup3), writes to a pipe go never saw, whatever the variable says.
// Every must-pass sentinel calls it, and one more that runs after every
// sequential test (t.Parallel): a swap made at the first call of the code
// under test, in a test that ran after a single check, was not seen (two
// later reviews' winners: os.Stdout's File, then fd 1 itself).
const goStdoutFD = `
func %[1]s(t *%[2]s.T) {
	t.Helper()
	for i, f := range []*%[3]s.File{%[3]s.Stdout, %[3]s.Stderr} {
		fd := ^uintptr(0)
		if rc, err := f.SyscallConn(); err == nil {
			rc.Control(func(d uintptr) { fd = d })
		}
		if fd != 1 && fd != uintptr(i+1) {
			t.Fatalf("os.Stdout or os.Stderr no longer writes to fd %%d (it writes to %%d)", i+1, int(fd))
		}
	}
	if _, err := %[3]s.Lstat(%[4]q); err == nil {
		return
	}
	got, err := %[3]s.Readlink("/proc/self/fd/1")
	if err != nil {
		return
	}
	if given, ok := %[3]s.LookupEnv(%[5]q); ok && given != "?" && got != given {
		t.Fatalf("this test binary's standard output is %%q, not the %%q go test gave it", got, given)
	}
	pid := %[3]s.Getppid()
	for i := 0; i < 64 && pid > 1; i++ {
		dir := "/proc/" + %[6]s.Itoa(pid)
		if exe, err := %[3]s.Readlink(dir + "/exe"); err == nil && %[8]s.Base(exe) == "go" {
			fds, err := %[3]s.ReadDir(dir + "/fd")
			if err != nil {
				return
			}
			for _, fd := range fds {
				if l, _ := %[3]s.Readlink(dir + "/fd/" + fd.Name()); l == got {
					return
				}
			}
			t.Fatalf("this test binary's standard output (%%s) is not one the go command (pid %%d) holds", got, pid)
		}
		stat, err := %[3]s.ReadFile(dir + "/stat")
		if err != nil {
			return
		}
		rest := string(stat)
		if k := %[7]s.LastIndexByte(rest, ')'); k >= 0 {
			rest = rest[k+1:]
		}
		f := %[7]s.Fields(rest)
		if len(f) < 2 {
			return
		}
		if pid, err = %[6]s.Atoi(f[1]); err != nil {
			return
		}
	}
	t.Fatalf("no go command among this test binary's ancestors")
}
`

// goSentinels is the source of one package's sentinel file and its
// sentinels, "" when fresh names ran out; file is the sentinel file's
// name and fdVar the variable the -exec wrapper sets.
func goSentinels(clause, text, pkg string, helpers []goHelper, mustFail bool, file, fdVar string) (string, []sentinel) {
	alias := func() string { return "q" + randWord(upperAlpha, 8) }
	tst, rfl, osA, convA, strA, fpA := alias(), alias(), alias(), alias(), alias(), alias()
	words := freshNames(2, "", func() string { return pick(nouns) })
	n := 4 + len(goVals)*(1+len(helpers)) + len(helpers)
	names := freshNames(n, text, func() string { return "Test" + title(pick(adjectives)) + title(pick(nouns)) })
	if len(words) < 2 || len(names) < n {
		return "", nil
	}
	fdCheck := alias()
	a, b := randInt(3, 90), randInt(200, 900)
	val := func(tmpl string) string { return fmt.Sprintf(tmpl, a, b, words[0], words[1]) }
	var src strings.Builder
	fmt.Fprintf(&src, "package %s\n\nimport (\n\t%s \"testing\"\n\t%s \"reflect\"\n\t%s \"os\"\n\t%s \"strconv\"\n\t%s \"strings\"\n\t%s \"path/filepath\"\n", clause, tst, rfl, osA, convA, strA, fpA)
	hAlias := make([]string, len(helpers))
	for i, h := range helpers {
		hAlias[i] = alias()
		fmt.Fprintf(&src, "\t%s %q\n", hAlias[i], h.path)
	}
	src.WriteString(")\n")
	fmt.Fprintf(&src, goStdoutFD, fdCheck, tst, osA, file, fdVar, convA, strA, fpA)
	var list []sentinel
	test := func(fail bool, body string) {
		if fail && !mustFail {
			return
		}
		n := names[0]
		names = names[1:]
		list = append(list, sentinel{name: pkg + "." + n, mustFail: fail, scope: pkg + ".", goPkg: pkg})
		fmt.Fprintf(&src, "\nfunc %s(t *%s.T) {\n\t%s\n}\n", n, tst, body)
	}
	var all []string
	for i, v := range goVals {
		all = append(all, fmt.Sprintf(goReports[i], rfl, val(v.got), val(v.pass)))
	}
	test(false, fdCheck+"(t)\n\t"+strings.Join(all, "\n\t"))
	test(false, fmt.Sprintf(goOrigin, fdCheck))
	test(false, "t.Parallel()\n\t"+fdCheck+"(t)")
	for i, v := range goVals {
		test(true, fmt.Sprintf(goReports[i], rfl, val(v.got), val(v.fail)))
	}
	for i, h := range helpers {
		call := func(x, y string) string {
			if h.kind == "method" {
				c := alias()
				return fmt.Sprintf("{\n\t\t%s := %s.%s(t)\n\t\t%s.%s(%s, %s)\n\t}", c, hAlias[i], h.ctor, c, h.fn, x, y)
			}
			if h.kind == "diff" {
				return fmt.Sprintf("if d := %s.%s(%s, %s); d != \"\" {\n\t\tt.Errorf(\"differ: %%s\", d)\n\t}", hAlias[i], h.fn, x, y)
			}
			return fmt.Sprintf("%s.%s(t, %s, %s)", hAlias[i], h.fn, x, y)
		}
		var pass []string
		for _, v := range goVals {
			if v.cmp || h.anyKind {
				pass = append(pass, call(val(v.got), val(v.pass)))
			}
		}
		test(false, fdCheck+"(t)\n\t"+strings.Join(pass, "\n\t"))
		for _, v := range goVals {
			if v.cmp || h.anyKind {
				test(true, call(val(v.got), val(v.fail)))
			}
		}
	}
	return src.String(), list
}
