package world

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

func cmdSort(c *cmd, args []string) int {
	set, files, err := flags(args, "tk")
	if err != nil {
		return c.failErr(err)
	}
	b, st := c.inputs(files)
	ls := lines(b)
	key := func(l string) string { return l }
	if k, ok := set['k']; ok {
		n, _ := strconv.Atoi(strings.Split(k, ",")[0])
		sep := set['t']
		key = func(l string) string {
			var f []string
			if sep != "" {
				f = strings.Split(l, sep)
			} else {
				f = strings.Fields(l)
			}
			if n >= 1 && n <= len(f) {
				return strings.Join(f[n-1:], " ")
			}
			return ""
		}
	}
	less := func(a, b string) bool { return key(a) < key(b) }
	if has(set, "n") {
		less = func(a, b string) bool { return leadNum(key(a)) < leadNum(key(b)) }
	}
	sort.SliceStable(ls, func(i, j int) bool {
		if has(set, "r") {
			return less(ls[j], ls[i])
		}
		return less(ls[i], ls[j])
	})
	prev := "\x00none"
	for _, l := range ls {
		if has(set, "u") && l == prev {
			continue
		}
		prev = l
		fmt.Fprintln(c.out, l)
	}
	return st
}

func leadNum(s string) float64 {
	s = strings.TrimSpace(s)
	end := 0
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] == '.' || end == 0 && s[end] == '-') {
		end++
	}
	f, _ := strconv.ParseFloat(s[:end], 64)
	return f
}

func cmdUniq(c *cmd, args []string) int {
	set, files, _ := flags(args, "")
	b, st := c.inputs(files)
	ls := lines(b)
	for i := 0; i < len(ls); {
		j := i
		for j < len(ls) && ls[j] == ls[i] {
			j++
		}
		n := j - i
		switch {
		case has(set, "d") && n < 2, has(set, "u") && n > 1:
		case has(set, "c"):
			fmt.Fprintf(c.out, "%7d %s\n", n, ls[i])
		default:
			fmt.Fprintln(c.out, ls[i])
		}
		i = j
	}
	return st
}

func cmdCut(c *cmd, args []string) int {
	set, files, err := flags(args, "dfc")
	if err != nil {
		return c.failErr(err)
	}
	b, st := c.inputs(files)
	sel := set['f']
	chars := false
	if v, ok := set['c']; ok {
		sel, chars = v, true
	}
	ranges, err := parseRanges(sel)
	if err != nil {
		return c.fail("invalid list")
	}
	d := "\t"
	if v, ok := set['d']; ok {
		d = v
	}
	for _, l := range lines(b) {
		var parts []string
		if chars {
			parts = strings.Split(l, "")
		} else {
			if !strings.Contains(l, d) {
				fmt.Fprintln(c.out, l)
				continue
			}
			parts = strings.Split(l, d)
		}
		var out []string
		for i, p := range parts {
			if inRanges(ranges, i+1) {
				out = append(out, p)
			}
		}
		if chars {
			fmt.Fprintln(c.out, strings.Join(out, ""))
		} else {
			fmt.Fprintln(c.out, strings.Join(out, d))
		}
	}
	return st
}

func parseRanges(s string) ([][2]int, error) {
	var rs [][2]int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, b := 1, 1<<30
		var err error
		if lo != "" {
			if a, err = strconv.Atoi(lo); err != nil {
				return nil, err
			}
		}
		if !isRange {
			b = a
		} else if hi != "" {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, err
			}
		}
		rs = append(rs, [2]int{a, b})
	}
	return rs, nil
}

func inRanges(rs [][2]int, i int) bool {
	for _, r := range rs {
		if i >= r[0] && i <= r[1] {
			return true
		}
	}
	return false
}

func cmdTr(c *cmd, args []string) int {
	set, rest, _ := flags(args, "")
	b, err := io.ReadAll(c.in)
	if err != nil {
		return c.failErr(err)
	}
	if len(rest) == 0 {
		return c.fail("missing operand")
	}
	from := expandSet(rest[0])
	if has(set, "d") {
		for _, r := range []byte(b) {
			if !bytes.ContainsRune(from, rune(r)) {
				c.out.Write([]byte{r})
			}
		}
		return 0
	}
	if len(rest) < 2 {
		return c.fail("missing operand")
	}
	to := expandSet(rest[1])
	var out []byte
	for _, ch := range b {
		if i := bytes.IndexByte(from, ch); i >= 0 {
			if len(to) == 0 {
				continue
			}
			ch = to[min(i, len(to)-1)]
			if has(set, "s") && len(out) > 0 && out[len(out)-1] == ch {
				continue
			}
		}
		out = append(out, ch)
	}
	c.out.Write(out)
	return 0
}

func expandSet(s string) []byte {
	switch s {
	case "[:upper:]":
		s = "A-Z"
	case "[:lower:]":
		s = "a-z"
	case "[:digit:]":
		s = "0-9"
	case "[:space:]":
		return []byte(" \t\n\r\v\f")
	}
	s = strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\\`, `\`).Replace(s)
	var out []byte
	for i := 0; i < len(s); i++ {
		if i+2 < len(s) && s[i+1] == '-' && s[i] <= s[i+2] {
			for ch := int(s[i]); ch <= int(s[i+2]); ch++ {
				out = append(out, byte(ch))
			}
			i += 2
			continue
		}
		out = append(out, s[i])
	}
	return out
}

// countArg reads head's and tail's "-n N", "-N" and "-n +N".
func countArg(args []string) (int, bool, []string, error) {
	n, from := 10, false
	var files []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-n" && i+1 < len(args):
			i++
			a = args[i]
		case strings.HasPrefix(a, "-n"):
			a = a[2:]
		case len(a) > 1 && a[0] == '-' && a[1] >= '0' && a[1] <= '9':
			a = a[1:]
		default:
			files = append(files, a)
			continue
		}
		if strings.HasPrefix(a, "+") {
			from, a = true, a[1:]
		}
		v, err := strconv.Atoi(a)
		if err != nil {
			return 0, false, nil, fmt.Errorf("invalid number of lines: %q", a)
		}
		n = v
	}
	return n, from, files, nil
}

func cmdHead(c *cmd, args []string) int {
	n, _, files, err := countArg(args)
	if err != nil {
		return c.failErr(err)
	}
	b, st := c.inputs(files)
	for i, l := range lines(b) {
		if i >= n {
			break
		}
		fmt.Fprintln(c.out, l)
	}
	return st
}

func cmdTail(c *cmd, args []string) int {
	n, from, files, err := countArg(args)
	if err != nil {
		return c.failErr(err)
	}
	b, st := c.inputs(files)
	ls := lines(b)
	start := len(ls) - n
	if from {
		start = n - 1
	}
	for _, l := range ls[max(0, min(start, len(ls))):] {
		fmt.Fprintln(c.out, l)
	}
	return st
}

func cmdWc(c *cmd, args []string) int {
	set, files, _ := flags(args, "")
	one := func(b []byte, name string) {
		l, w, ch := bytes.Count(b, []byte("\n")), len(bytes.Fields(b)), len(b)
		var parts []string
		if !has(set, "lwc") {
			parts = []string{fmt.Sprintf("%7d", l), fmt.Sprintf("%7d", w), fmt.Sprintf("%7d", ch)}
		} else {
			if has(set, "l") {
				parts = append(parts, strconv.Itoa(l))
			}
			if has(set, "w") {
				parts = append(parts, strconv.Itoa(w))
			}
			if has(set, "c") {
				parts = append(parts, strconv.Itoa(ch))
			}
		}
		out := strings.Join(parts, " ")
		if name != "" {
			out += " " + name
		}
		fmt.Fprintln(c.out, out)
	}
	if len(files) == 0 {
		b, _ := io.ReadAll(c.in)
		one(b, "")
		return 0
	}
	status := 0
	for _, f := range files {
		b, err := c.read(f)
		if err != nil {
			status = c.failErr(err)
			continue
		}
		one(b, f)
	}
	return status
}

func cmdTee(c *cmd, args []string) int {
	set, files, _ := flags(args, "")
	b, err := io.ReadAll(c.in)
	if err != nil {
		return c.failErr(err)
	}
	c.out.Write(b)
	status := 0
	for _, f := range files {
		flag := 0o1101 // O_WRONLY|O_CREATE|O_TRUNC
		if has(set, "a") {
			flag = 0o2101 // O_WRONLY|O_CREATE|O_APPEND
		}
		h, err := c.fs.Open(c.abs(f), flag, 0o644)
		if err != nil {
			status = c.failErr(err)
			continue
		}
		if _, err := h.Write(b); err != nil {
			status = c.failErr(err)
		}
	}
	return status
}
