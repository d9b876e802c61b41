package world

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// lines splits text into lines without their newlines; a last line without one still counts.
func lines(b []byte) []string {
	s := string(b)
	if s == "" {
		return nil
	}
	s = strings.TrimSuffix(s, "\n")
	return strings.Split(s, "\n")
}

func cmdGrep(c *cmd, args []string) int {
	set, rest, err := flags(args, "e")
	if err != nil || (len(rest) == 0 && set['e'] == "") {
		return c.fail("usage: grep [-EFrnivlco] PATTERN [FILE...]")
	}
	pat, ok := set['e']
	if !ok {
		pat, rest = rest[0], rest[1:]
	}
	if has(set, "F") {
		pat = regexp.QuoteMeta(pat)
	} else if !has(set, "E") {
		pat = basicToExtended(pat)
	}
	if has(set, "i") {
		pat = "(?i)" + pat
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		c.fail("bad pattern: %v", err)
		return 2
	}
	type src struct{ name, abs string }
	var srcs []src
	recursive := has(set, "rR")
	if len(rest) == 0 {
		if recursive {
			rest = []string{"."}
		} else {
			srcs = append(srcs, src{name: "(standard input)", abs: "-"})
		}
	}
	status := 0
	for _, r := range rest {
		if !recursive {
			srcs = append(srcs, src{name: r, abs: r})
			continue
		}
		var walk func(shown, a string)
		walk = func(shown, a string) {
			st, err := c.fs.Stat(a, true)
			if err != nil {
				status = 2
				c.fail("%s: %v", shown, unwrapPath(err))
				return
			}
			if !st.IsDir() {
				srcs = append(srcs, src{name: shown, abs: a})
				return
			}
			ents, _ := c.fs.ReadDir(a)
			for _, e := range ents {
				walk(strings.TrimSuffix(shown, "/")+"/"+e.Name(), a+"/"+e.Name())
			}
		}
		walk(r, c.abs(r))
	}
	multi := len(srcs) > 1 || recursive
	matched := false
	for _, s := range srcs {
		b, err := c.read(s.abs)
		if err != nil {
			c.fail("%s: %v", s.name, unwrapPath(err))
			status = 2
			continue
		}
		count := 0
		for i, l := range lines(b) {
			hit := re.MatchString(l)
			if has(set, "v") {
				hit = !hit
			}
			if !hit {
				continue
			}
			count++
			matched = true
			if has(set, "lc") {
				continue
			}
			prefix := ""
			if multi {
				prefix = s.name + ":"
			}
			if has(set, "n") {
				prefix += strconv.Itoa(i+1) + ":"
			}
			if has(set, "o") && !has(set, "v") {
				for _, m := range re.FindAllString(l, -1) {
					fmt.Fprintf(c.out, "%s%s\n", prefix, m)
				}
				continue
			}
			fmt.Fprintf(c.out, "%s%s\n", prefix, l)
		}
		switch {
		case has(set, "l") && count > 0:
			fmt.Fprintln(c.out, s.name)
		case has(set, "c") && !has(set, "l"):
			if multi {
				fmt.Fprintf(c.out, "%s:%d\n", s.name, count)
			} else {
				fmt.Fprintln(c.out, count)
			}
		}
	}
	if status != 0 {
		return status
	}
	if !matched {
		return 1
	}
	return 0
}

// basicToExtended turns a POSIX basic regular expression into Go's syntax: \( \) \{ \} \| \+ \?
// are the operators, bare ( ) { } | + ? are literals.
func basicToExtended(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		ch := p[i]
		if ch == '\\' && i+1 < len(p) {
			n := p[i+1]
			i++
			if strings.IndexByte("(){}|+?", n) >= 0 {
				b.WriteByte(n)
			} else {
				b.WriteByte('\\')
				b.WriteByte(n)
			}
			continue
		}
		if strings.IndexByte("(){}|+?", ch) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(ch)
	}
	return b.String()
}

func cmdXargs(c *cmd, args []string) int {
	set, rest, err := flags(args, "n")
	if err != nil {
		return c.failErr(err)
	}
	if len(rest) == 0 {
		rest = []string{"echo"}
	}
	b, _ := io.ReadAll(c.in)
	items := strings.Fields(string(b))
	n := len(items)
	if v, ok := set['n']; ok {
		n, _ = strconv.Atoi(v)
	}
	fn := commands[rest[0]]
	if fn == nil {
		fmt.Fprintf(c.err, "xargs: %s: command not found\n", rest[0])
		return 127
	}
	status := 0
	for i := 0; i == 0 || i < len(items); i += max(n, 1) {
		chunk := items[i:min(len(items), i+max(n, 1))]
		sub := *c
		sub.name, sub.in = rest[0], strings.NewReader("")
		if st := fn(&sub, append(append([]string(nil), rest[1:]...), chunk...)); st != 0 {
			status = 123
		}
		if len(items) == 0 {
			break
		}
	}
	return status
}
