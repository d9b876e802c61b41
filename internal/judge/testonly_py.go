package judge

import (
	"path"
	"sort"
	"strings"
)

// Python: a module (a .py file; a package is its __init__.py) is
// test-only when
//   - a part of its path says test helper (helperName: testing.py,
//     _testing.py, testutils/, tests_support/, harness.py, …) — Python has
//     no internal/, so the name is what says users do not import it,
//   - at least one test-side file imports it (the files the default
//     patterns strip: test_*.py, *_test.py, conftest.py, tests/, test/,
//     …), and every file that imports it is test side or another
//     test-only module.
//
// Imports are read from the text, at any depth (an import inside a
// function counts), "import a.b" and "from a.b import c, d" (both a.b and
// a.b.c, as c may be a module), relative ones resolved from the file's
// folder. An absolute name matches any module whose dotted path ends in
// it (the judge cannot know which folders are on sys.path), and importing
// a.b.c imports a and a.b too. A non-test file that imports by a computed
// name (importlib, __import__) is taken to import every module whose name
// is a word of its text; one too large to read stops the Python analysis.

var pyTextCap = int64(maxScriptFile)

type pyModule struct {
	file      string
	key       string // dotted path from the root
	importers []pyImporter
}

type pyImporter struct {
	file     string
	testSide bool
}

// testOnlyPy returns the .py files of the tree's test-only modules.
func testOnlyPy(r *treeReader, files []string) []string {
	mods := map[string][]*pyModule{}   // key -> modules (a.py and a/__init__.py)
	suffix := map[string][]*pyModule{} // every dotted suffix of a key
	var all []*pyModule
	for _, f := range files {
		if path.Ext(f) != ".py" {
			continue
		}
		key := strings.TrimSuffix(f, ".py")
		key = strings.TrimSuffix(strings.TrimSuffix(key, "/__init__"), "__init__")
		key = strings.ReplaceAll(strings.Trim(key, "/"), "/", ".")
		m := &pyModule{file: f, key: key}
		all = append(all, m)
		mods[key] = append(mods[key], m)
		parts := strings.Split(key, ".")
		for i := range parts {
			s := strings.Join(parts[i:], ".")
			suffix[s] = append(suffix[s], m)
		}
	}
	candidates := 0
	for _, m := range all {
		if pyCandidate(m) {
			candidates++
		}
	}
	if candidates == 0 {
		return nil
	}
	var dynamic []map[string]bool // words of non-test files importing by computed names
	for _, f := range files {
		if path.Ext(f) != ".py" {
			continue
		}
		side := isTestSide(f)
		data, whole, ok := r.read(f, pyTextCap)
		if !ok || !whole {
			if side {
				continue
			}
			return nil
		}
		add := func(m *pyModule) {
			if m.file != f {
				m.importers = append(m.importers, pyImporter{file: f, testSide: side})
			}
		}
		abs, rel := pyImports(data)
		for _, name := range abs {
			parts := strings.Split(name, ".")
			for i := 1; i <= len(parts); i++ {
				for _, m := range suffix[strings.Join(parts[:i], ".")] {
					add(m)
				}
			}
		}
		for _, name := range rel {
			for _, key := range pyResolve(f, name) {
				for _, m := range mods[key] {
					add(m)
				}
			}
		}
		if !side && pyDynamic(data) {
			dynamic = append(dynamic, wordsOf(data, ""))
		}
	}
	// the least fixpoint: a module joins once every importer is test
	// side or already test-only; an import cycle never does
	testOnly := map[*pyModule]bool{}
	onlyFile := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for _, m := range all {
			if testOnly[m] || !pyCandidate(m) || len(m.importers) == 0 || namedIn(dynamic, m.key) {
				continue
			}
			ok := true
			for _, im := range m.importers {
				if !im.testSide && !onlyFile[im.file] {
					ok = false
					break
				}
			}
			if ok {
				testOnly[m], onlyFile[m.file] = true, true
				changed = true
			}
		}
	}
	var out []string
	for m := range testOnly {
		if !isTestSide(m.file) {
			out = append(out, m.file)
		}
	}
	sort.Strings(out)
	return out
}

// pyCandidate: a part of the module's path is a test helper's name, and
// it is no file a test runner treats as a test (those are stripped).
func pyCandidate(m *pyModule) bool {
	for _, part := range strings.Split(m.key, ".") {
		if helperName(part) {
			return true
		}
	}
	return false
}

// namedIn: a computed import in some non-test file could name the module.
func namedIn(dynamic []map[string]bool, key string) bool {
	last := strings.ToLower(key[strings.LastIndexByte(key, '.')+1:])
	for _, words := range dynamic {
		if words[last] {
			return true
		}
	}
	return false
}

func pyDynamic(data []byte) bool {
	s := string(data)
	return strings.Contains(s, "import_module") || strings.Contains(s, "__import__") ||
		strings.Contains(s, "importlib") || strings.Contains(s, "pkgutil") || strings.Contains(s, "runpy")
}

// pyResolve turns a relative import (".x.y", "..z") of file into the keys
// it names, its packages included.
func pyResolve(file, name string) []string {
	level := len(name) - len(strings.TrimLeft(name, "."))
	rest := name[level:]
	dir := dirOf(file)
	for i := 1; i < level; i++ {
		if dir == "" {
			return nil
		}
		dir = dirOf(dir)
	}
	base := strings.ReplaceAll(dir, "/", ".")
	out := []string{base}
	if rest != "" {
		for _, part := range strings.Split(rest, ".") {
			if base == "" {
				base = part
			} else {
				base += "." + part
			}
			out = append(out, base)
		}
	}
	return out
}

// pyImports reads the import statements of a Python source: absolute
// dotted names, and relative ones with their leading dots.
func pyImports(src []byte) (abs, rel []string) {
	add := func(name string) {
		if strings.HasPrefix(name, ".") {
			rel = append(rel, name)
		} else {
			abs = append(abs, name)
		}
	}
	for _, stmt := range pyStatements(string(src)) {
		switch {
		case strings.HasPrefix(stmt, "import "):
			for _, item := range strings.Split(stmt[len("import "):], ",") {
				f := strings.Fields(item)
				if len(f) == 1 || len(f) == 3 && f[1] == "as" {
					if pyDotted(f[0], false) {
						add(f[0])
					}
				}
			}
		case strings.HasPrefix(stmt, "from "):
			mod, names, ok := strings.Cut(stmt[len("from "):], " import ")
			mod = strings.TrimSpace(mod)
			if !ok || !pyDotted(mod, true) {
				continue
			}
			add(mod)
			names = strings.Trim(strings.TrimSpace(names), "()")
			for _, item := range strings.Split(names, ",") {
				f := strings.Fields(item)
				if (len(f) == 1 || len(f) == 3 && f[1] == "as") && pyDotted(f[0], false) && !strings.Contains(f[0], ".") {
					if strings.HasSuffix(mod, ".") {
						add(mod + f[0])
					} else {
						add(mod + "." + f[0])
					}
				}
			}
		}
	}
	return abs, rel
}

// pyStatements are the source's lines that start an import, each joined
// with its continuation lines (a backslash, or an open parenthesis).
func pyStatements(src string) []string {
	var out []string
	lines := strings.Split(src, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.Contains(lines[i], "import") && !strings.HasSuffix(strings.TrimSpace(lines[i]), "\\") {
			continue // most lines: no statement of ours starts here
		}
		line := strings.TrimSpace(pyNoComment(lines[i]))
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, "\\") + " " + strings.TrimSpace(pyNoComment(lines[i]))
		}
		if strings.Count(line, "(") > strings.Count(line, ")") && strings.HasPrefix(line, "from ") {
			for j := 0; j < 200 && i+1 < len(lines) && !strings.Contains(line, ")"); j++ {
				i++
				line += " " + strings.TrimSpace(pyNoComment(lines[i]))
			}
		}
		for _, stmt := range strings.Split(line, ";") {
			stmt = strings.Join(strings.Fields(stmt), " ")
			stmt = strings.ReplaceAll(strings.ReplaceAll(stmt, "( ", "("), " )", ")")
			if strings.HasPrefix(stmt, "import ") || strings.HasPrefix(stmt, "from ") {
				out = append(out, strings.TrimRight(stmt, " "))
			}
		}
	}
	return out
}

func pyNoComment(line string) string {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		return line[:i]
	}
	return line
}

// pyDotted: a dotted name of identifiers (leading dots allowed when rel).
func pyDotted(s string, rel bool) bool {
	if rel {
		s = strings.TrimLeft(s, ".")
		if s == "" {
			return true
		}
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" {
			return false
		}
		for i, c := range part {
			if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80 || i > 0 && c >= '0' && c <= '9') {
				return false
			}
		}
	}
	return true
}
