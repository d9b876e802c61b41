package mutant

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// has says whether ms holds a mutant turning orig into repl on a line
// containing ctx.
func has(src string, ms []Mutant, orig, repl, ctx string) bool {
	for _, m := range ms {
		line := src[lineStart([]byte(src), m.Start):lineEnd([]byte(src), m.End)]
		if m.Original == orig && m.Replacement == repl && strings.Contains(line, ctx) {
			return true
		}
	}
	return false
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	goSrc := `package p

const limit = 10 // never mutated: a constant

func F(a, b int, ok bool) (int, error) {
	if a < b && !ok {
		a++
	}
	b += a * 2
	if a == -b {
		return 0, nil
	}
	g(a)
	return a % b, err
}
`
	pySrc := `# a < b in a comment
def f(a, b, *args, **kw):
    s = "a - b"  # in a string
    if a > b and not kw:
        return a - b
    return True
`
	jsSrc := `// a - b in a comment
const re = /a-b+/g;
function f(a, b) {
  if (a === b || !a) { return a * 2; }
  return ` + "`x-${a}`" + ` === "s" ? true : false;
}
`
	cases := []struct {
		file, src       string
		orig, repl, ctx string
		want            bool
	}{
		{"p.go", goSrc, "<", "<=", "a < b", true},
		{"p.go", goSrc, "<", ">=", "a < b", true},
		{"p.go", goSrc, "&&", "||", "a < b", true},
		{"p.go", goSrc, "!", "", "!ok", true},
		{"p.go", goSrc, "++", "--", "a++", true},
		{"p.go", goSrc, "+=", "-=", "b +=", true},
		{"p.go", goSrc, "*", "/", "a * 2", true},
		{"p.go", goSrc, "==", "!=", "a == -b", true},
		{"p.go", goSrc, "-", "+", "a == -b", true},
		{"p.go", goSrc, "0", "1", "return 0", true},
		{"p.go", goSrc, "err", "nil", "return a % b, err", true},
		{"p.go", goSrc, "g(a)", ";", "g(a)", true},
		{"p.go", goSrc, "%", "*", "a % b", true},
		{"p.go", goSrc, "10", "0", "limit", false},
		{"x_test.go", goSrc, "<", "<=", "a < b", false},
		{"p.py", pySrc, ">", ">=", "a > b", true},
		{"p.py", pySrc, "and", "or", "a > b", true},
		{"p.py", pySrc, "not ", "", "not kw", true},
		{"p.py", pySrc, "-", "+", "return a - b", true},
		{"p.py", pySrc, "True", "False", "return True", true},
		{"p.py", pySrc, `"a - b"`, `"XXa - bXX"`, "s =", true},
		{"p.py", pySrc, "-", "+", `"a - b"`, false},
		{"p.py", pySrc, "<", "<=", "comment", false},
		{"p.py", pySrc, "*", "/", "*args", false},
		{"p.js", jsSrc, "===", "!==", "a === b", true},
		{"p.js", jsSrc, "||", "&&", "a === b", true},
		{"p.js", jsSrc, "!", "", "!a", true},
		{"p.js", jsSrc, "*", "/", "a * 2", true},
		{"p.js", jsSrc, "true", "false", "? true", true},
		{"p.js", jsSrc, "-", "+", "/a-b+/", false},
		{"p.js", jsSrc, "-", "+", "comment", false},
		{"p.js", jsSrc, "-", "+", "`x-", false},
	}
	for _, tc := range cases {
		t.Run(tc.file+" "+tc.orig+"→"+tc.repl+" in "+tc.ctx, func(t *testing.T) {
			t.Parallel()
			ms, err := Generate(tc.file, []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			if got := has(tc.src, ms, tc.orig, tc.repl, tc.ctx); got != tc.want {
				t.Errorf("mutant %q→%q on %q: %v, want %v", tc.orig, tc.repl, tc.ctx, got, tc.want)
			}
		})
	}
}

// Every Go mutant of a well-formed file is still well-formed Go: a
// mutant that does not parse would be a wasted build.
func TestGoMutantsParse(t *testing.T) {
	t.Parallel()
	src := []byte(`package p

func G(xs []int) (n int) {
	for i := 0; i < len(xs); i++ {
		if xs[i]%2 == 0 || !(xs[i] > 3) {
			n += xs[i]
			continue
		}
		n--
	}
	return n
}
`)
	ms, err := Generate("p.go", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 10 {
		t.Fatalf("only %d mutants", len(ms))
	}
	for _, m := range ms {
		if _, err := parser.ParseFile(token.NewFileSet(), "p.go", m.Apply(src), 0); err != nil {
			t.Errorf("%s (%q→%q) does not parse: %v", m.ID, m.Original, m.Replacement, err)
		}
	}
}
