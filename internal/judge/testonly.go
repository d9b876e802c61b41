package judge

import (
	"io"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/forkbomb/forkbomb/internal/layerfs"
)

// Test-only code is test code. A Go package that only tests import, a
// Python or JavaScript helper module that only tests load, is the tests'
// own infrastructure even though its file name is not a test's: a patch
// that edits it to ignore failures has edited the tests. testOnlyPatterns
// finds such code in the base, once per Prepare, from imports alone, and
// returns strip patterns for it.
//
// The analysis is conservative by construction: a package or module is
// test-only only when every importer the judge can see is a test (or other
// test-only code), at least one test imports it, AND something besides the
// graph says users cannot reach it — Go's internal/ rule, or a name that
// says "test helper". A file it cannot read or parse counts as importing
// everything it might: in doubt, code is kept, never stripped. The rules
// for each language are in testonly_go.go, testonly_py.go, testonly_node.go;
// docs/JUDGE.md says what they may still wrongly strip.

const (
	// maxTestOnlyFiles bounds the files the analysis lists; a larger tree
	// is not analysed at all (nothing more is stripped).
	maxTestOnlyFiles = 60000
	// maxTestOnlyBytes bounds what is read in all: past it the analysis
	// gives up, stripping nothing more.
	maxTestOnlyBytes = 256 << 20
	// goHead is how much of a Go file is read first: its imports come
	// before any declaration.
	goHead = 8 << 10
	// maxScriptFile bounds one Python or JavaScript file; a larger one is
	// taken to import everything.
	maxScriptFile = 2 << 20
)

// testOnlyPatterns returns strip patterns for the test-only code of the
// tree: one per file of a Python or JavaScript module, one per folder of a
// Go package (its files, new ones included). A pattern the user keeps
// (StripOptions.Remove, `--keep`, in any letter case) is left out.
func testOnlyPatterns(tree string, keep []string) []string {
	r := newTreeReader(tree)
	if r == nil {
		return nil
	}
	defer r.close()
	files := listBase(tree, nil, func(rel string) bool {
		switch path.Ext(rel) {
		case ".go", ".py":
			return true
		}
		return isJS(rel) || path.Base(rel) == "go.mod" || path.Base(rel) == "package.json"
	}, maxTestOnlyFiles)
	if len(files) >= maxTestOnlyFiles {
		return nil
	}
	var pats []string
	for _, dir := range testOnlyGo(r, files) {
		pats = append(pats, "/"+escapeGlob(dir)+"/*")
	}
	for _, f := range append(testOnlyPy(r, files), testOnlyJS(r, files)...) {
		pats = append(pats, "/"+escapeGlob(f))
	}
	var out []string
	for _, p := range pats {
		kept := false
		for _, k := range keep {
			if strings.EqualFold(k, p) || strings.EqualFold(strings.TrimPrefix(k, "/"), strings.TrimPrefix(p, "/")) {
				kept = true
			}
		}
		if !kept {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// escapeGlob makes a path match only itself as a strip pattern.
func escapeGlob(p string) string {
	var b strings.Builder
	for _, c := range p {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// isTestSide says whether a file of the tree is test code by the default
// strip patterns (tests, their folders, runner configuration): its
// imports make a module test-used, never user-used.
func isTestSide(rel string) bool {
	low := strings.ToLower(rel)
	for _, pat := range lowDefaultPatterns() {
		if matchPattern(pat, low) {
			return true
		}
	}
	return false
}

// IsTestPath says whether the judge strips a patch's edits to rel by its
// default patterns (tests, their data, runner configuration, build files):
// what a task mined from history hides from its agents as the tests.
func IsTestPath(rel string) bool { return isTestSide(rel) }

// inTestFolder says whether files of a folder are stripped by a default
// folder pattern, whatever their names (cached per folder).
func inTestFolder(cache map[string]bool, dir string) bool {
	if v, ok := cache[dir]; ok {
		return v
	}
	v := dir != "" && isTestSide(dir+"/\x00") // a name no name pattern matches
	cache[dir] = v
	return v
}

// lowDefaultPatterns: strip matching ignores case, so matching the
// lowered path against lowered patterns is the same test, done once.
var lowDefaultPatterns = sync.OnceValue(func() []string {
	out := make([]string, len(DefaultStripPatterns))
	for i, p := range DefaultStripPatterns {
		out[i] = strings.ToLower(p)
	}
	return out
})

// treeReader reads files of the base through one descriptor of its root,
// with no link followed (layerfs), within maxTestOnlyBytes in all.
type treeReader struct {
	d    *layerfs.Dir
	left int64
	buf  []byte // reused for reads of at most goHead bytes
}

func newTreeReader(tree string) *treeReader {
	d, err := layerfs.Open(tree)
	if err != nil {
		return nil
	}
	return &treeReader{d: d, left: maxTestOnlyBytes, buf: make([]byte, goHead)}
}

func (r *treeReader) close() { r.d.Close() }

// read returns up to limit bytes of a regular file and whether that is all
// of it; ok is false when it cannot be read or the budget is spent. A
// read of goHead bytes (a Go file's head) is valid until the next one.
func (r *treeReader) read(rel string, limit int64) (data []byte, whole, ok bool) {
	if r.left <= 0 {
		return nil, false, false
	}
	f, st, err := r.d.OpenFile(rel)
	if err != nil {
		return nil, false, false
	}
	defer f.Close()
	n := max(min(st.Size, limit, r.left), 0)
	if limit == goHead { // a Go file's head: the caller keeps no reference
		data = r.buf[:n]
	} else {
		data = make([]byte, n)
	}
	got, err := io.ReadFull(f, data)
	if err != nil && err != io.ErrUnexpectedEOF {
		return nil, false, false
	}
	data = data[:got]
	r.left -= int64(len(data))
	return data, int64(len(data)) >= st.Size, true
}

// helperName reports whether a module's or package's name says it is a
// test helper. The words are the ones projects use for the tests' own
// infrastructure; plain "helpers" or "utils" are not among them (they
// say nothing of tests, and inside a tests/ folder they are stripped
// already).
func helperName(name string) bool {
	switch strings.ToLower(strings.ReplaceAll(name, "-", "_")) {
	case "testing", "_testing", "testutil", "testutils", "test_util", "test_utils", "_test_utils", "_testutils",
		"testing_utils", "testhelper", "testhelpers", "test_helper", "test_helpers", "testsupport", "test_support",
		"tests_support", "testlib", "test_lib", "harness", "test_harness", "testharness", "testkit", "test_kit":
		return true
	}
	return false
}

// dirOf is the slash folder of a slash path, "" at the root.
func dirOf(rel string) string {
	if d := path.Dir(rel); d != "." {
		return d
	}
	return ""
}

// wordsOf is the set of identifier-like words of text: a file that imports
// by a computed name is taken to import every module its words name.
func wordsOf(text []byte, extra string) map[string]bool {
	out := map[string]bool{}
	start := -1
	for i := 0; i <= len(text); i++ {
		in := i < len(text) && (text[i] == '_' || text[i] >= 'a' && text[i] <= 'z' || text[i] >= 'A' && text[i] <= 'Z' ||
			text[i] >= '0' && text[i] <= '9' || text[i] >= 0x80 || strings.IndexByte(extra, text[i]) >= 0)
		switch {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			out[strings.ToLower(string(text[start:i]))] = true
			start = -1
		}
	}
	return out
}
