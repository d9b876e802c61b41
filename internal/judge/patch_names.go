package judge

import (
	"errors"
	"fmt"
	"strings"
)

// The names in a git patch: C-quoted when they hold a control byte, a
// quote or a backslash (and, by default, bytes over 0x7f), raw otherwise.
// A name the judge reads differently from git is the whole attack of a
// strip bypass, so every reading here is checked against git's own
// (gitCheck) and anything unusual is refused rather than guessed.

// nameOfSide reads the name on a "---" or "+++" line: "/dev/null" for no
// file, else a name under a one-component prefix ("a/", "b/").
func nameOfSide(rest string) (name string, null bool, err error) {
	rest = strings.TrimSuffix(rest, "\t")
	if rest == "/dev/null" {
		return "", true, nil
	}
	raw, err := cName(rest)
	if err != nil {
		return "", false, err
	}
	name, err = stripPrefix(raw)
	return name, false, err
}

// cName reads a whole name, quoted or raw, with nothing after it.
func cName(s string) (string, error) {
	if strings.HasPrefix(s, `"`) {
		name, rest, err := unquoteC(s)
		if err != nil {
			return "", err
		}
		if rest != "" {
			return "", fmt.Errorf("text after a quoted name: %q", rest)
		}
		return name, checkPath(name)
	}
	if strings.ContainsAny(s, "\"\\") {
		return "", fmt.Errorf("an unquoted name with a quote or backslash: %q", s)
	}
	return s, checkPath(s)
}

// stripPrefix drops the first component ("a/", "b/"), as git apply -p1.
func stripPrefix(raw string) (string, error) {
	i := strings.IndexByte(raw, '/')
	if i <= 0 || i == len(raw)-1 {
		return "", fmt.Errorf("a name without a prefix to strip: %q", raw)
	}
	return raw[i+1:], checkPath(raw[i+1:])
}

// checkPath refuses names git would normalise or refuse (squashed
// slashes, "." and ".." components, absolute paths): the judge must see
// the very name git writes.
func checkPath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Contains(p, "//") {
		return fmt.Errorf("a malformed path %q", p)
	}
	for _, c := range strings.Split(p, "/") {
		if c == "." || c == ".." {
			return fmt.Errorf("a path with a %q component: %q", c, p)
		}
	}
	if strings.ContainsRune(p, 0) {
		return errors.New("a path with a NUL byte")
	}
	return nil
}

// diffGitNames returns every reading of a "diff --git A B" line's two
// names, prefixes stripped. Unquoted names with spaces are ambiguous; the
// caller picks the reading the other header lines confirm.
func diffGitNames(hdr string) ([][2]string, error) {
	rest, ok := strings.CutPrefix(hdr, "diff --git ")
	if !ok {
		return nil, errors.New("not a \"diff --git\" line")
	}
	var out [][2]string
	add := func(a, b string) {
		sa, err1 := sideName(a)
		sb, err2 := sideName(b)
		if err1 == nil && err2 == nil {
			out = append(out, [2]string{sa, sb})
		}
	}
	if strings.HasPrefix(rest, `"`) {
		a, after, err := unquoteC(rest)
		if err != nil {
			return nil, err
		}
		b, ok := strings.CutPrefix(after, " ")
		if !ok {
			return nil, errors.New("a \"diff --git\" line without a second name")
		}
		sa, err1 := stripPrefix(a)
		sb, err2 := sideName(b)
		if err1 == nil && err2 == nil {
			out = append(out, [2]string{sa, sb})
		}
	} else {
		for i := 0; i < len(rest); i++ {
			if rest[i] == ' ' {
				add(rest[:i], rest[i+1:])
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no reading of the \"diff --git\" line %q", hdr)
	}
	return out, nil
}

// sideName reads one name of a "diff --git" line.
func sideName(s string) (string, error) {
	raw, err := cName(s)
	if err != nil {
		return "", err
	}
	return stripPrefix(raw)
}

// unquoteC reads one C-quoted string at the start of s the way git's
// unquote_c_style does — raw bytes kept as they are (strconv.Unquote would
// turn invalid UTF-8 into U+FFFD and so read another name than git) — and
// returns it with the text after the closing quote.
func unquoteC(s string) (string, string, error) {
	if !strings.HasPrefix(s, `"`) {
		return "", s, errors.New("not a quoted name")
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			return b.String(), s[i+1:], nil
		case '\\':
			i++
			if i >= len(s) {
				return "", s, errors.New("an unterminated quoted name")
			}
			if e, ok := cEscapes[s[i]]; ok {
				b.WriteByte(e)
				continue
			}
			if i+2 < len(s) && '0' <= s[i] && s[i] <= '3' && isOctal(s[i+1]) && isOctal(s[i+2]) {
				b.WriteByte((s[i]-'0')<<6 | (s[i+1]-'0')<<3 | (s[i+2] - '0'))
				i += 2
				continue
			}
			return "", s, fmt.Errorf("an unknown escape \\%c in a quoted name", s[i])
		default:
			b.WriteByte(c)
		}
	}
	return "", s, errors.New("an unterminated quoted name")
}

var cEscapes = map[byte]byte{'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v', '\\': '\\', '"': '"'}

func isOctal(c byte) bool { return '0' <= c && c <= '7' }
