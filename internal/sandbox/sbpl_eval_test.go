package sandbox

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// A reader of the SBPL writeSeatbelt writes and an evaluator of it with
// Seatbelt's rule — the last rule that matches an operation decides, and
// with (deny default) nothing else is allowed — so that the properties of
// a profile are checked on what it says, not on its text. It knows the
// forms the writer uses and fails on any other: a new form needs its
// meaning here first.

// sexp is one form: an atom (a symbol), a string, a regex, or a list.
type sexp struct {
	atom, str, regex string
	kind             byte // 'a', 's', 'r' or 'l'
	list             []sexp
}

// parseSBPL reads a whole profile into its top-level forms.
func parseSBPL(src string) ([]sexp, error) {
	p := &sbplReader{src: src}
	var forms []sexp
	for {
		p.space()
		if p.i >= len(p.src) {
			return forms, nil
		}
		f, err := p.form()
		if err != nil {
			return nil, err
		}
		forms = append(forms, f)
	}
}

type sbplReader struct {
	src string
	i   int
}

// space skips blanks and comments (';' to the end of the line).
func (p *sbplReader) space() {
	for p.i < len(p.src) {
		switch c := p.src[p.i]; {
		case c == ' ' || c == '\n' || c == '\t':
			p.i++
		case c == ';':
			for p.i < len(p.src) && p.src[p.i] != '\n' {
				p.i++
			}
		default:
			return
		}
	}
}

func (p *sbplReader) form() (sexp, error) {
	switch {
	case p.src[p.i] == '(':
		p.i++
		l := sexp{kind: 'l'}
		for {
			p.space()
			if p.i >= len(p.src) {
				return l, fmt.Errorf("unclosed list")
			}
			if p.src[p.i] == ')' {
				p.i++
				return l, nil
			}
			f, err := p.form()
			if err != nil {
				return l, err
			}
			l.list = append(l.list, f)
		}
	case p.src[p.i] == ')':
		return sexp{}, fmt.Errorf("unexpected ) at %d", p.i)
	case p.src[p.i] == '"':
		p.i++
		var b strings.Builder
		for p.i < len(p.src) {
			c := p.src[p.i]
			p.i++
			switch c {
			case '"':
				return sexp{kind: 's', str: b.String()}, nil
			case '\\':
				if p.i >= len(p.src) || (p.src[p.i] != '\\' && p.src[p.i] != '"') {
					return sexp{}, fmt.Errorf("an escape the writer never makes at %d", p.i)
				}
				b.WriteByte(p.src[p.i])
				p.i++
			case '\n', '\r':
				return sexp{}, fmt.Errorf("a line break in a string at %d", p.i)
			default:
				b.WriteByte(c)
			}
		}
		return sexp{}, fmt.Errorf("unclosed string")
	case strings.HasPrefix(p.src[p.i:], `#"`):
		end := strings.IndexByte(p.src[p.i+2:], '"')
		if end < 0 {
			return sexp{}, fmt.Errorf("unclosed regex")
		}
		r := p.src[p.i+2 : p.i+2+end]
		p.i += end + 3
		return sexp{kind: 'r', regex: r}, nil
	}
	start := p.i
	for p.i < len(p.src) && !strings.ContainsRune(" \n\t()\";", rune(p.src[p.i])) {
		p.i++
	}
	return sexp{kind: 'a', atom: p.src[start:p.i]}, nil
}

// sbRule is one (allow|deny OP… FILTER…) of a profile.
type sbRule struct {
	allow   bool
	ops     []string
	filters []sexp
}

// profileRules reads a profile's rules; its first two forms must be
// (version 1) and (deny default).
func profileRules(t testing.TB, profile string) []sbRule {
	t.Helper()
	forms, err := parseSBPL(profile)
	if err != nil {
		t.Fatalf("the profile does not parse: %v\n%s", err, profile)
	}
	if len(forms) < 2 || render(forms[0]) != "(version 1)" || render(forms[1]) != "(deny default)" {
		t.Fatalf("the profile does not start with (version 1) (deny default)")
	}
	var rules []sbRule
	for _, f := range forms[2:] {
		if f.kind != 'l' || len(f.list) < 2 || (f.list[0].atom != "allow" && f.list[0].atom != "deny") {
			t.Fatalf("not a rule: %s", render(f))
		}
		r := sbRule{allow: f.list[0].atom == "allow"}
		for _, x := range f.list[1:] {
			switch x.kind {
			case 'a':
				r.ops = append(r.ops, x.atom)
			case 'l':
				r.filters = append(r.filters, x)
			default:
				t.Fatalf("a bare string or regex in %s", render(f))
			}
		}
		rules = append(rules, r)
	}
	return rules
}

func render(f sexp) string {
	switch f.kind {
	case 'a':
		return f.atom
	case 's':
		return quote(f.str)
	case 'r':
		return `#"` + f.regex + `"`
	}
	parts := make([]string, len(f.list))
	for i, x := range f.list {
		parts[i] = render(x)
	}
	return "(" + strings.Join(parts, " ") + ")"
}

// query is one operation a sandboxed process attempts.
type query struct {
	op     string // file-read-data, file-write-create, process-exec, network-outbound…
	path   string // a file operation's, or a UNIX socket's
	remote string // network: "localhost:PORT", "192.0.2.1:443"; "unix" with path
	local  string // network-bind: likewise
	target string // signal: "same-sandbox" or "other"
	name   string // sysctl-read: a sysctl; mach-lookup: a service; system-socket: a domain
}

// allowed decides q as Seatbelt would.
func allowed(t testing.TB, rules []sbRule, q query) bool {
	t.Helper()
	decision := false // (deny default)
	for _, r := range rules {
		if !opMatches(r.ops, q.op) {
			continue
		}
		match := len(r.filters) == 0
		for _, f := range r.filters {
			if filterMatches(t, f, q) {
				match = true
			}
		}
		if match {
			decision = r.allow
		}
	}
	return decision
}

func opMatches(ops []string, op string) bool {
	for _, o := range ops {
		if o == op || strings.HasSuffix(o, "*") && strings.HasPrefix(op, strings.TrimSuffix(o, "*")) {
			return true
		}
	}
	return false
}

func filterMatches(t testing.TB, f sexp, q query) bool {
	t.Helper()
	if len(f.list) < 2 {
		t.Fatalf("an empty filter: %s", render(f))
	}
	arg := f.list[1]
	switch key := f.list[0].atom; key {
	case "literal":
		return q.path != "" && q.remote != "unix" && q.local != "unix" && q.path == arg.str
	case "subpath":
		return q.path != "" && q.remote != "unix" && q.local != "unix" && within(q.path, arg.str)
	case "regex":
		return q.path != "" && q.remote != "unix" && q.local != "unix" && compiled(arg.regex).MatchString(q.path)
	case "remote", "local":
		addr := q.remote
		if key == "local" {
			addr = q.local
		}
		switch arg.atom {
		case "ip":
			host, port, _ := strings.Cut(f.list[2].str, ":")
			qh, qp, _ := strings.Cut(addr, ":")
			return addr != "unix" && addr != "" && qh == host && (port == "*" || port == qp)
		case "unix-socket":
			return addr == "unix" && f.list[2].list[0].atom == "subpath" && within(q.path, f.list[2].list[1].str)
		}
	case "target":
		return q.target == arg.atom
	case "sysctl-name", "global-name":
		return q.name == arg.str
	case "sysctl-name-prefix":
		return strings.HasPrefix(q.name, arg.str)
	case "socket-domain":
		return q.name == arg.atom
	}
	t.Fatalf("a filter this evaluator does not know: %s", render(f))
	return false
}

// literals lists every string a profile holds, in order.
func literals(forms []sexp) []string {
	var out []string
	for _, f := range forms {
		switch f.kind {
		case 's':
			out = append(out, f.str)
		case 'l':
			out = append(out, literals(f.list)...)
		}
	}
	return out
}

var regexes sync.Map // string → *regexp.Regexp

// compiled is the regex of a profile, compiled once.
func compiled(re string) *regexp.Regexp {
	if r, ok := regexes.Load(re); ok {
		return r.(*regexp.Regexp)
	}
	r := regexp.MustCompile(re)
	regexes.Store(re, r)
	return r
}
