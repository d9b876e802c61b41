package world

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// sedCmd is one parsed sed command: an optional address (or range), a verb and its argument.
type sedCmd struct {
	addr1, addr2 *sedAddr
	verb         byte
	re           *regexp.Regexp
	repl         string
	global       bool
	print        bool
	inRange      bool
}

type sedAddr struct {
	line int // 0: not a line number; -1: $
	re   *regexp.Regexp
}

func cmdSed(c *cmd, args []string) int {
	set, rest, err := flags(args, "e")
	if err != nil {
		return c.failErr(err)
	}
	script, ok := set['e']
	if !ok {
		if len(rest) == 0 {
			return c.fail("usage: sed [-n] [-i] [-E] SCRIPT [FILE...]")
		}
		script, rest = rest[0], rest[1:]
	}
	cmds, err := parseSed(script, has(set, "E") || has(set, "r"))
	if err != nil {
		c.fail("-e expression: %v", err)
		return 1
	}
	if has(set, "i") {
		status := 0
		for _, f := range rest {
			b, err := c.read(f)
			if err != nil {
				status = c.failErr(err)
				continue
			}
			var out bytes.Buffer
			runSed(cmds, b, &out, has(set, "n"))
			if err := c.fs.WriteFile(c.abs(f), out.Bytes(), 0o644); err != nil {
				status = c.failErr(err)
			}
		}
		return status
	}
	b, st := c.inputs(rest)
	runSed(cmds, b, c.out, has(set, "n"))
	return st
}

func parseSed(script string, ere bool) ([]*sedCmd, error) {
	var cmds []*sedCmd
	s := script
	compile := func(p string) (*regexp.Regexp, error) {
		if !ere {
			p = basicToExtended(p)
		}
		return regexp.Compile(p)
	}
	addr := func() (*sedAddr, error) {
		switch {
		case s != "" && s[0] == '$':
			s = s[1:]
			return &sedAddr{line: -1}, nil
		case s != "" && s[0] >= '0' && s[0] <= '9':
			i := 0
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			n, _ := strconv.Atoi(s[:i])
			s = s[i:]
			return &sedAddr{line: n}, nil
		case s != "" && s[0] == '/':
			end := strings.Index(s[1:], "/")
			if end < 0 {
				return nil, fmt.Errorf("unterminated address regex")
			}
			re, err := compile(s[1 : end+1])
			s = s[end+2:]
			return &sedAddr{re: re}, err
		}
		return nil, nil
	}
	for {
		s = strings.TrimLeft(s, " \t\n;")
		if s == "" {
			return cmds, nil
		}
		sc := &sedCmd{}
		var err error
		if sc.addr1, err = addr(); err != nil {
			return nil, err
		}
		if sc.addr1 != nil && s != "" && s[0] == ',' {
			s = s[1:]
			if sc.addr2, err = addr(); err != nil || sc.addr2 == nil {
				return nil, fmt.Errorf("bad range")
			}
		}
		if s == "" {
			return nil, fmt.Errorf("missing command")
		}
		sc.verb, s = s[0], s[1:]
		switch sc.verb {
		case 'd', 'p':
		case 's':
			if s == "" {
				return nil, fmt.Errorf("unterminated `s' command")
			}
			delim := s[0]
			parts := splitUnescaped(s[1:], delim, 2)
			if len(parts) < 3 {
				return nil, fmt.Errorf("unterminated `s' command")
			}
			if sc.re, err = compile(parts[0]); err != nil {
				return nil, err
			}
			sc.repl = sedRepl(parts[1])
			fl := parts[2]
			i := 0
			for i < len(fl) && strings.IndexByte("gp", fl[i]) >= 0 {
				sc.global = sc.global || fl[i] == 'g'
				sc.print = sc.print || fl[i] == 'p'
				i++
			}
			s = fl[i:]
		default:
			return nil, fmt.Errorf("unknown command: `%c'", sc.verb)
		}
		cmds = append(cmds, sc)
	}
}

// splitUnescaped splits s at the first n unescaped delim bytes; the rest is the last part.
func splitUnescaped(s string, delim byte, n int) []string {
	var parts []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			if s[i+1] == delim {
				cur.WriteByte(delim)
			} else {
				cur.WriteByte('\\')
				cur.WriteByte(s[i+1])
			}
			i++
			continue
		}
		if s[i] == delim && len(parts) < n {
			parts = append(parts, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteByte(s[i])
	}
	return append(parts, cur.String())
}

// sedRepl turns sed's & and \1 into Go's ${0} and ${1}.
func sedRepl(r string) string {
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		switch {
		case r[i] == '\\' && i+1 < len(r) && r[i+1] >= '0' && r[i+1] <= '9':
			b.WriteString("${" + string(r[i+1]) + "}")
			i++
		case r[i] == '\\' && i+1 < len(r):
			if r[i+1] == 'n' {
				b.WriteByte('\n')
			} else {
				b.WriteByte(r[i+1])
			}
			i++
		case r[i] == '&':
			b.WriteString("${0}")
		case r[i] == '$':
			b.WriteString("$$")
		default:
			b.WriteByte(r[i])
		}
	}
	return b.String()
}

func (a *sedAddr) match(n, last int, l string) bool {
	switch {
	case a.re != nil:
		return a.re.MatchString(l)
	case a.line == -1:
		return n == last
	}
	return n == a.line
}

func runSed(cmds []*sedCmd, in []byte, out io.Writer, quiet bool) {
	ls := lines(in)
	for i, l := range ls {
		n := i + 1
		deleted := false
		for _, sc := range cmds {
			if !sc.applies(n, len(ls), l) {
				continue
			}
			switch sc.verb {
			case 'd':
				deleted = true
			case 'p':
				fmt.Fprintln(out, l)
			case 's':
				done := false
				l2 := sc.re.ReplaceAllStringFunc(l, func(m string) string {
					if done {
						return m
					}
					done = !sc.global
					return sc.re.ReplaceAllString(m, sc.repl)
				})
				if l2 != l || sc.re.MatchString(l) {
					l = l2
					if sc.print {
						fmt.Fprintln(out, l)
					}
				}
			}
			if deleted {
				break
			}
		}
		if !deleted && !quiet {
			fmt.Fprintln(out, l)
		}
	}
}

func (sc *sedCmd) applies(n, last int, l string) bool {
	if sc.addr1 == nil {
		return true
	}
	if sc.addr2 == nil {
		return sc.addr1.match(n, last, l)
	}
	if sc.inRange {
		if sc.addr2.match(n, last, l) || sc.addr2.line > 0 && n >= sc.addr2.line {
			sc.inRange = false
		}
		return true
	}
	if sc.addr1.match(n, last, l) {
		sc.inRange = !(sc.addr2.line > 0 && n >= sc.addr2.line)
		return true
	}
	return false
}
