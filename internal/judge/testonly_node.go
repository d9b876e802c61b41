package judge

import (
	"encoding/json"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// JavaScript: a module file is test-only when
//   - its file name or a folder above it says test helper (helperName:
//     testing.js, test-utils.js, harness/, test_helpers.mjs, …),
//   - it is no entry of a package.json of the tree (main — index.js when
//     there is none — module, browser, bin, exports),
//   - at least one test-side file (the default patterns: *.test.js,
//     test/, __tests__/, …) requires or imports it by a relative path, and
//     every file that does is test side or another test-only module.
//
// A non-test file counts as importing every module whose name is the
// last part of any specifier it imports, relative or not (an alias such
// as "@/lib/testing" resolves through configuration the judge does not
// read), and one that requires a computed name as importing every module
// whose name is a word of its text; one too large to read stops the
// JavaScript analysis.

var (
	jsSpec = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:\brequire\s*\(\s*|\bimport\s*\(\s*|\bfrom\s*|\bimport\s+)(?:'([^'\n]+)'|"([^"\n]+)"|` + "`([^`$\\n]+)`" + `)`)
	})
	jsDynamic = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\b(?:require|import)\s*\(\s*(?:[^'"\x60\s)]|(?:'[^'\n]*'|"[^"\n]*"|\x60[^\x60]*\x60)\s*[^)\s])`)
	}) // an argument that is not one literal
	jsExts = []string{".js", ".cjs", ".mjs", ".jsx", ".ts", ".cts", ".mts", ".tsx"}
)

func isJS(rel string) bool {
	for _, e := range jsExts {
		if strings.HasSuffix(rel, e) {
			return true
		}
	}
	return false
}

// testOnlyJS returns the tree's test-only JavaScript module files.
func testOnlyJS(r *treeReader, files []string) []string {
	exists := map[string]bool{}
	var cands []string
	entries := map[string]bool{}
	var wilds []string // prefixes of subpath patterns ("./lib/*")
	for _, f := range files {
		switch {
		case path.Base(f) == "package.json":
			data, _, ok := r.read(f, 1<<20)
			if !ok {
				return nil
			}
			for _, e := range pkgEntries(data) {
				if pre, _, wild := strings.Cut(e, "*"); wild {
					wilds = append(wilds, path.Join(dirOf(f), pre))
				} else {
					entries[path.Join(dirOf(f), e)] = true
				}
			}
		case isJS(f):
			exists[f] = true
			if jsCandidate(f) && !isTestSide(f) {
				cands = append(cands, f)
			}
		}
	}
	if len(cands) == 0 {
		return nil
	}
	importers := map[string][]pyImporter{}
	userNamed := map[string]bool{} // last parts of a non-test file's specifiers
	var dynamic []map[string]bool  // words of non-test files requiring computed names
	for _, f := range files {
		if !isJS(f) {
			continue
		}
		side := isTestSide(f)
		data, whole, ok := r.read(f, maxScriptFile)
		if !ok || !whole {
			if side {
				continue
			}
			return nil
		}
		for _, m := range jsSpec().FindAllSubmatch(data, -1) {
			spec := string(m[1]) + string(m[2]) + string(m[3])
			if !side {
				userNamed[strings.ToLower(jsStem(spec))] = true
			}
			if !strings.HasPrefix(spec, "./") && !strings.HasPrefix(spec, "../") && spec != "." && spec != ".." {
				continue
			}
			for _, t := range jsResolve(exists, path.Join(dirOf(f), spec)) {
				if t != f {
					importers[t] = append(importers[t], pyImporter{file: f, testSide: side})
				}
			}
		}
		if !side && jsDynamic().Match(data) {
			dynamic = append(dynamic, wordsOf(data, "-"))
		}
	}
	testOnly := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for _, c := range cands {
			stem := strings.ToLower(jsStem(c))
			if testOnly[c] || entries[c] || len(importers[c]) == 0 || userNamed[stem] || namedIn(dynamic, stem) || underAny(c, wilds) {
				continue
			}
			ok := true
			for _, im := range importers[c] {
				if !im.testSide && !testOnly[im.file] {
					ok = false
					break
				}
			}
			if ok {
				testOnly[c] = true
				changed = true
			}
		}
	}
	var out []string
	for f := range testOnly {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

func underAny(f string, prefixes []string) bool {
	for _, p := range prefixes {
		if p == "." || strings.HasPrefix(f, p) {
			return true
		}
	}
	return false
}

// jsCandidate: the file's name or a folder above it is a test helper's.
func jsCandidate(f string) bool {
	parts := strings.Split(dirOf(f), "/")
	parts = append(parts, jsStem(f))
	for _, p := range parts {
		if helperName(p) {
			return true
		}
	}
	return false
}

// jsStem is a specifier's or file's last part without its extension;
// "index" names its folder.
func jsStem(spec string) string {
	spec = strings.TrimRight(spec, "/")
	base := path.Base(spec)
	for _, e := range append(jsExts, ".json") {
		base = strings.TrimSuffix(base, e)
	}
	if base == "index" && path.Dir(spec) != "." {
		return path.Base(path.Dir(spec))
	}
	return base
}

// jsResolve is what a relative specifier may load, as node and bundlers
// resolve it: the file, the file with an extension, or the folder's index.
func jsResolve(exists map[string]bool, p string) []string {
	var out []string
	if exists[p] {
		out = append(out, p)
	}
	for _, e := range jsExts {
		for _, c := range []string{p + e, path.Join(p, "index"+e)} {
			if exists[c] {
				out = append(out, c)
			}
		}
	}
	return out
}

// pkgEntries are the files a package.json makes importable by users,
// relative to its folder.
func pkgEntries(data []byte) []string {
	var pj map[string]any
	if json.Unmarshal(data, &pj) != nil {
		return nil
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			if strings.Contains(x, "*") {
				out = append(out, x)
				return
			}
			out = append(out, path.Clean(x))
			for _, e := range jsExts {
				out = append(out, path.Clean(x)+e, path.Join(x, "index"+e))
			}
		case map[string]any:
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	if _, ok := pj["main"]; !ok {
		walk("index.js")
	}
	for _, k := range []string{"main", "module", "browser", "bin", "exports"} {
		walk(pj[k])
	}
	return out
}
