package mutant

import (
	"strconv"
	"strings"
)

// A tokenizer-level mutator for Python and JavaScript: it knows enough of
// each language to skip comments, strings (prefixed and triple-quoted in
// Python, template literals in JavaScript) and JavaScript regex literals,
// and to tell a binary operator from a unary one by the token before it.
// It mutates what mutmut (Python) and Stryker (JavaScript) mutate at the
// token level: arithmetic, comparison, equality, bitwise and augmented
// assignment operators, and/or, not, booleans, break/continue, numbers
// (mutmut: n → n+1) and strings (mutmut: "XX" around; Stryker: empty).
// It does not know syntax trees, so it does not do Stryker's block,
// array, object or optional-chaining mutators, nor mutmut's decorator
// and argument removal.

type lang struct {
	name     string
	hashLine bool // # starts a comment
	slashCom bool // // and /* */ are comments
	triple   bool // ''' and """ strings
	template bool // `...` strings
	regex    bool // /.../ literals
	ops      []string
	opSwap   map[string]string
	keyword  map[string]string
	numbers  bool
	strRepl  func(lit string) string
}

var pyOps = []string{"**=", "//=", ">>=", "<<=", "**", "//", "->", ":=", "==", "!=", "<=", ">=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<", ">>",
	"+", "-", "*", "/", "%", "<", ">", "&", "|", "^", "~", "=", "(", ")", "[", "]", "{", "}", ",", ":", ".", ";", "@"}

var jsOps = []string{">>>=", "===", "!==", "**=", "&&=", "||=", "??=", ">>>", "<<=", ">>=", "=>", "==", "!=", "<=", ">=", "&&", "||", "??", "++", "--", "+=", "-=", "*=", "/=", "%=",
	"&=", "|=", "^=", "**", "<<", ">>", "?.", "...", "+", "-", "*", "/", "%", "<", ">", "&", "|", "^", "~", "!", "=", "(", ")", "[", "]", "{", "}", ",", ":", ".", ";", "?"}

var arith = map[string]string{"+": "-", "-": "+", "*": "/", "/": "*", "%": "/", "**": "*", "//": "/", "<<": ">>", ">>": "<<", "&": "|", "|": "&", "^": "&",
	"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==",
	"+=": "-=", "-=": "+=", "*=": "/=", "/=": "*=", "%=": "/=", "//=": "/=", "**=": "*=", "<<=": ">>=", ">>=": "<<=", "&=": "|=", "|=": "&=", "^=": "&="}

// negated are the comparisons' second mutants (Stryker's; mutmut has
// only the boundary ones in arith).
var negated = map[string]string{"<": ">=", "<=": ">", ">": "<=", ">=": "<"}

var python = &lang{
	name: "python", hashLine: true, triple: true, ops: pyOps, opSwap: arith, numbers: true,
	keyword: map[string]string{"and": "or", "or": "and", "True": "False", "False": "True", "break": "continue", "continue": "break", "not": ""},
	strRepl: func(lit string) string {
		// mutmut's: XX inside the quotes, after any prefix
		i := strings.IndexAny(lit, `'"`)
		q := lit[i : i+1]
		if strings.HasPrefix(lit[i:], q+q+q) {
			q = q + q + q
		}
		return lit[:i+len(q)] + "XX" + lit[i+len(q):len(lit)-len(q)] + "XX" + lit[len(lit)-len(q):]
	},
}

var javascript = &lang{
	name: "javascript", slashCom: true, template: true, regex: true, ops: jsOps,
	opSwap: merge(arith, map[string]string{"===": "!==", "!==": "===", "&&": "||", "||": "&&", "??": "&&", "++": "--", "--": "++", "!": "",
		"&&=": "||=", "||=": "&&=", ">>>": ">>"}),
	keyword: map[string]string{"true": "false", "false": "true", "break": "continue", "continue": "break"},
	strRepl: func(lit string) string {
		if len(lit) == 2 {
			return lit[:1] + "Stryker was here!" + lit[1:]
		}
		return lit[:1] + lit[len(lit)-1:]
	},
}

func merge(a, b map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

// tokenMutants scans src once; prevOperand says whether the last
// significant token ends an operand (so an operator after it is binary).
func tokenMutants(src []byte, l *lang) []Mutant {
	s := string(src)
	var ms []Mutant
	add := func(op string, start, end int, repl string) {
		ms = append(ms, Mutant{Operator: op, Start: start, End: end, Replacement: repl})
	}
	prevOperand := false
	prevWord := ""
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\\':
			i++
			continue
		case l.hashLine && c == '#', l.slashCom && strings.HasPrefix(s[i:], "//"):
			i = skipTo(s, i, "\n")
			continue
		case l.slashCom && strings.HasPrefix(s[i:], "/*"):
			i = skipTo(s, i+2, "*/")
			continue
		case c == '"' || c == '\'' || (l.template && c == '`'):
			end := stringEnd(s, i, l)
			if end-i >= 2 && c != '`' && prevWord != "import" && prevWord != "from" {
				add("StringLiteral", i, end, l.strRepl(s[i:end]))
			}
			i, prevOperand, prevWord = end, true, ""
			continue
		case l.regex && c == '/' && !prevOperand:
			i, prevOperand = regexEnd(s, i), true
			continue
		case isIdentStart(c):
			j := i
			for j < len(s) && isIdentPart(s[j]) {
				j++
			}
			w := s[i:j]
			if l == python && j < len(s) && (s[j] == '"' || s[j] == '\'') && len(w) <= 2 && strings.Trim(strings.ToLower(w), "rbfu") == "" {
				end := stringEnd(s, j, l)
				if !strings.ContainsAny(w, "bB") {
					add("StringLiteral", i, end, l.strRepl(s[i:end]))
				}
				i, prevOperand, prevWord = end, true, ""
				continue
			}
			if r, ok := l.keyword[w]; ok {
				name := "Keyword"
				if w == "not" {
					name = "UnaryOperator"
					add(name, i, skipSpace(s, j), r)
				} else {
					add(name, i, j, r)
				}
			}
			i, prevOperand, prevWord = j, !isKeyword(w, l), w
			continue
		case c >= '0' && c <= '9', c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := i
			for j < len(s) && (isIdentPart(s[j]) || s[j] == '.') {
				j++
			}
			if l.numbers {
				if n, err := strconv.ParseInt(s[i:j], 10, 64); err == nil {
					add("NumberLiteral", i, j, strconv.FormatInt(n+1, 10))
				}
			}
			i, prevOperand, prevWord = j, true, ""
			continue
		}
		op := ""
		for _, o := range l.ops {
			if strings.HasPrefix(s[i:], o) {
				op = o
				break
			}
		}
		if op == "" {
			i++
			continue
		}
		if r, ok := l.opSwap[op]; ok {
			switch {
			case op == "!" || op == "++" || op == "--":
				if op == "!" && strings.HasPrefix(s[i:], "!=") {
					break
				}
				add("UnaryOperator", i, i+len(op), r)
			case prevOperand:
				add(opName(op), i, i+len(op), r)
				if n, ok := negated[op]; ok {
					add(opName(op), i, i+len(op), n)
				}
			}
		}
		prevOperand = op == ")" || op == "]" || op == "}" || ((op == "++" || op == "--") && prevOperand)
		prevWord = ""
		i += len(op)
	}
	return ms
}

func opName(op string) string {
	switch op {
	case "<", "<=", ">", ">=":
		return "EqualityOperator"
	case "==", "!=", "===", "!==":
		return "EqualityOperator"
	case "&&", "||", "??", "&&=", "||=":
		return "LogicalOperator"
	}
	if strings.HasSuffix(op, "=") {
		return "AssignmentOperator"
	}
	return "ArithmeticOperator"
}

func isKeyword(w string, l *lang) bool {
	switch w {
	case "return", "if", "elif", "else", "while", "for", "in", "not", "and", "or", "is", "yield", "await", "lambda", "case",
		"typeof", "new", "delete", "void", "throw", "of", "instanceof", "assert", "del", "raise", "with", "as":
		return true
	}
	return false
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isIdentPart(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

func skipTo(s string, i int, end string) int {
	j := strings.Index(s[i:], end)
	if j < 0 {
		return len(s)
	}
	return i + j + len(end)
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// stringEnd is the offset after the string literal starting at i.
func stringEnd(s string, i int, l *lang) int {
	q := s[i : i+1]
	if l.triple && strings.HasPrefix(s[i:], q+q+q) {
		return skipTo(s, i+3, q+q+q)
	}
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case q[0]:
			return j + 1
		case '\n':
			if q != "`" {
				return j
			}
		}
	}
	return len(s)
}

func regexEnd(s string, i int) int {
	class := false
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '[':
			class = true
		case ']':
			class = false
		case '/':
			if !class {
				j++
				for j < len(s) && isIdentPart(s[j]) {
					j++
				}
				return j
			}
		case '\n':
			return j
		}
	}
	return len(s)
}
