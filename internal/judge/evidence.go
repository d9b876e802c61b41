package judge

import (
	"bytes"
	"fmt"
	"path"
	"sort"
	"strings"
	"unicode/utf8"
)

// The patch as evidence. Running the suite cannot tell a fix from code
// that behaves only while it is tested: `if testing.Testing()`, a stack
// walk that finds the calling test, a package that swaps the runner's
// assertions for its own. The patch's text can: what it adds outside test
// files is read, line by line, for constructs that detect or inspect a
// test run (evidence_rules.go). A finding never fails a patch — such
// constructs have honest uses — it keeps a passing one from winning
// unreviewed (event.Review). Obfuscated code is not found; docs/JUDGE.md
// says what is and is not.

// Finding is one construct that detects or inspects a test run, in what a patch adds outside tests.
type Finding struct {
	File      string `json:"file"`      // slash path in the tree
	Line      int    `json:"line"`      // line number in the new file
	Rule      string `json:"rule"`      // the rule's id, e.g. "go-testing-mode"
	Construct string `json:"construct"` // in words: "testing.Testing() call"
	Text      string `json:"text"`      // the added line, trimmed, at most 160 bytes
}

const (
	maxFindings = 50  // a verdict lists at most this many
	maxText     = 160 // bytes of a finding's line
)

// testFilePatterns are the strip patterns that name tests and their
// helpers (the first group of DefaultStripPatterns, and conftest.py): a
// file the user kept with --keep that matches one is a test, where these
// constructs are at home.
var testFilePatterns = []string{
	"*_test.go", "*.test.*", "*.spec.*", "*_test.*", "*-test.*", "*_spec.*", "*-spec.*",
	"test_*.py", "test-*.*", "tests.py", "test.js", "test.cjs", "test.mjs", "conftest.py",
	"test/", "tests/", "spec/", "__tests__/", "testdata/", "__snapshots__/", "__mocks__/", "cypress/",
}

func isTestFile(p string) bool {
	l := strings.ToLower(p)
	for _, pat := range testFilePatterns {
		if matchPattern(pat, l) {
			return true
		}
	}
	return false
}

// langOf names the rule set for a file by its extension ("" for none).
func langOf(p string) string {
	switch strings.ToLower(path.Ext(p)) {
	case ".go":
		return langGo
	case ".py", ".pyw", ".pyi":
		return langPy
	case ".js", ".cjs", ".mjs", ".ts", ".tsx", ".jsx", ".mts", ".cts":
		return langJS
	}
	return ""
}

// inspectPatch reads what a patch adds outside test files and returns
// the constructs of evidence_rules.go it finds, sorted by file and line,
// at most maxFindings. A patch it cannot parse yields none: the judge
// refuses such a patch before it gets here.
func inspectPatch(kept []byte) []Finding {
	files, err := parsePatch(kept)
	if err != nil {
		return nil
	}
	var out []Finding
	for _, f := range files {
		if f.newPath == "" || isTestFile(f.newPath) {
			continue
		}
		lang := langOf(f.newPath)
		if lang == "" {
			continue
		}
		out = append(out, inspectFile(f, lang)...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	if len(out) > maxFindings {
		out = out[:maxFindings]
	}
	return out
}

// line is one line of a hunk as the new file will hold it.
type line struct {
	n     int    // its number in the new file
	text  string // without the leading '+'/' ' and the newline
	added bool
}

// hunkLines returns the lines of a section's hunks that the new file
// holds (context and added), numbered, each hunk's lines apart.
func hunkLines(text []byte) [][]line {
	var hunks [][]line
	lines := bytes.SplitAfter(text, []byte("\n"))
	for i := 0; i < len(lines); i++ {
		h := string(lines[i])
		if !strings.HasPrefix(h, "@@ -") {
			continue
		}
		oldN, newN, ok := hunkHeader(h)
		n, ok2 := hunkNewStart(h)
		if !ok || !ok2 {
			continue
		}
		var cur []line
		for i++; i < len(lines) && (oldN > 0 || newN > 0); i++ {
			l := lines[i]
			if len(l) == 0 {
				break
			}
			body := strings.TrimSuffix(strings.TrimSuffix(string(l[1:]), "\n"), "\r")
			switch l[0] {
			case ' ', '\n':
				cur = append(cur, line{n: n, text: body})
				n, oldN, newN = n+1, oldN-1, newN-1
			case '+':
				cur = append(cur, line{n: n, text: body, added: true})
				n, newN = n+1, newN-1
			case '-':
				oldN--
			}
		}
		i-- // the loop's i++ comes back to the line after the hunk
		hunks = append(hunks, cur)
	}
	return hunks
}

// hunkNewStart reads c from "@@ -a[,b] +c[,d] @@".
func hunkNewStart(h string) (int, bool) {
	_, rest, ok := strings.Cut(h, " +")
	if !ok {
		return 0, false
	}
	pos, _, _ := strings.Cut(rest, " ")
	pos, _, _ = strings.Cut(pos, ",")
	if !digits(pos) || len(pos) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range pos {
		n = n*10 + int(c-'0')
	}
	return n, true
}

// binarySource is the finding for a source file patched as binary: git
// writes a file holding a NUL byte (which a JS comment or string may)
// as a compressed binary patch, whose text no rule reads.
var binarySource = rule{id: "binary-source", construct: "source file patched as binary (its text is not read)"}

func inspectFile(f filePatch, lang string) []Finding {
	hunks := hunkLines(f.text)
	if len(hunks) == 0 && (bytes.Contains(f.text, []byte("\nGIT binary patch\n")) || bytes.Contains(f.text, []byte("\nBinary files "))) {
		return []Finding{{File: f.newPath, Line: 0, Rule: binarySource.id, Construct: binarySource.construct, Text: "GIT binary patch"}}
	}
	main := isMainFile(f, lang, hunks)
	rules := rulesFor(lang)
	var out []Finding
	for _, h := range hunks {
		var st lexState // a hunk starts anywhere: assume code
		prev := ""      // the last line of code before this one
		for _, l := range h {
			// the whole line, however long: a minified line is one
			// line, and what follows 4 KiB of blanks is code too
			code, inStr := scanLine(lang, l.text, &st)
			if l.added {
				for i := range rules {
					r := &rules[i]
					if r.skipMain && main {
						continue
					}
					if r.match(code, inStr, prev, l.text) {
						// one finding a line, the table's first: a line is
						// named once, and the most telling construct first
						out = append(out, Finding{File: f.newPath, Line: l.n, Rule: r.id, Construct: r.construct, Text: clipText(l.text)})
						break
					}
				}
			}
			if hasCode(code, inStr) {
				prev = code
			}
		}
	}
	return out
}

// isMainFile reports whether a file is known to be a program's entry,
// where exiting is its business: a Go file whose section starts at line 1
// and whose first line of code is `package main` (a clause no library
// package can carry, and which a string cannot fake there), or Python's
// __main__.py (importing one is a finding of its own, py-main-import).
// Nothing else is: a folder name (cmd/, bin/) or an `if __name__ ==
// "__main__"` guard is the patch's to choose.
func isMainFile(f filePatch, lang string, hunks [][]line) bool {
	switch lang {
	case langPy:
		return path.Base(f.newPath) == "__main__.py"
	case langGo:
		if len(hunks) == 0 || len(hunks[0]) == 0 || hunks[0][0].n != 1 {
			return false
		}
		var st lexState
		for _, l := range hunks[0] {
			code, _ := scanLine(langGo, l.text, &st)
			if t := strings.TrimSpace(code); t != "" {
				return t == "package main"
			}
		}
	}
	return false
}

// hasCode reports whether a scanned line holds code: a byte that is
// neither blank, nor a comment's, nor a string literal's (a docstring's
// line holds none).
func hasCode(code string, inStr []bool) bool {
	for i := 0; i < len(code); i++ {
		if !inStr[i] && code[i] != ' ' && code[i] != '\t' {
			return true
		}
	}
	return false
}

func clipText(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxText {
		return s
	}
	cut := maxText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// lexState carries a multi-line comment or string from one line to the
// next within a hunk.
type lexState struct {
	block  bool // inside /* */
	quote  byte // inside a string opened by this quote
	triple bool // a Python triple-quoted string
}

// scanLine returns the line with its comments blanked (same length) and,
// per byte, whether it is inside a string literal (quotes included). It
// is a lexer of the cheap kind: it knows line and block comments, quotes
// and escapes, Go raw strings, JS template literals and Python triple
// quotes; it does not know JS regular expression literals or Python
// string prefixes beyond treating them as ordinary quotes.
func scanLine(lang, s string, st *lexState) (string, []bool) {
	code := []byte(s)
	inStr := make([]bool, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case st.block:
			if c == '*' && i+1 < len(s) && s[i+1] == '/' {
				code[i], code[i+1] = ' ', ' '
				i++
				st.block = false
				continue
			}
			code[i] = ' '
		case st.quote != 0:
			inStr[i] = true
			switch {
			case c == '\\' && st.quote != '`' || c == '\\' && lang == langJS:
				if i+1 < len(s) {
					inStr[i+1] = true
				}
				i++
			case c == st.quote && st.triple:
				if strings.HasPrefix(s[i:], strings.Repeat(string(c), 3)) {
					inStr[i+1], inStr[i+2] = true, true
					i += 2
					st.quote, st.triple = 0, false
				}
			case c == st.quote:
				st.quote = 0
			}
		case lang == langPy && c == '#':
			blank(code[i:])
			return string(code), inStr
		case lang != langPy && c == '/' && i+1 < len(s) && s[i+1] == '/':
			blank(code[i:])
			return string(code), inStr
		case lang != langPy && c == '/' && i+1 < len(s) && s[i+1] == '*':
			code[i], code[i+1] = ' ', ' '
			i++
			st.block = true
		case c == '"' || c == '\'' || (c == '`' && lang != langPy):
			inStr[i] = true
			st.quote = c
			if lang == langPy && strings.HasPrefix(s[i:], strings.Repeat(string(c), 3)) {
				inStr[i+1], inStr[i+2] = true, true
				i += 2
				st.triple = true
			}
		}
	}
	// a quote that only a raw string, template literal or triple quote
	// may carry over a line end
	if st.quote != 0 && !st.triple && st.quote != '`' {
		st.quote = 0
	}
	return string(code), inStr
}

func blank(b []byte) {
	for i := range b {
		b[i] = ' '
	}
}

// reviewReason is a review verdict's reason: at most three findings by
// name, then how many more.
func reviewReason(fs []Finding) string {
	var b strings.Builder
	b.WriteString("needs review: the tests pass, but the patch adds code that detects or inspects a test run: ")
	for i, f := range fs {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(fs)-3)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s:%d %s", f.File, f.Line, f.Construct)
	}
	return b.String()
}
