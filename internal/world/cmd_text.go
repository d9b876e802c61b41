package world

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"mvdan.cc/sh/v3/expand"
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

func cmdDiff(c *cmd, args []string) int {
	_, files, _ := flags(args, "")
	if len(files) != 2 {
		return c.fail("usage: diff FILE1 FILE2")
	}
	a, err := c.read(files[0])
	if err != nil {
		c.failErr(err)
		return 2
	}
	b, err := c.read(files[1])
	if err != nil {
		c.failErr(err)
		return 2
	}
	if bytes.Equal(a, b) {
		return 0
	}
	fmt.Fprintf(c.out, "--- %s\n+++ %s\n", files[0], files[1])
	x, y := lines(a), lines(b)
	// Longest common subsequence; worlds are small and diff is for humans and agents.
	m := make([][]int, len(x)+1)
	for i := range m {
		m[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				m[i][j] = m[i+1][j+1] + 1
			} else {
				m[i][j] = max(m[i+1][j], m[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			fmt.Fprintf(c.out, " %s\n", x[i])
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || m[i][j+1] >= m[i+1][j]):
			fmt.Fprintf(c.out, "+%s\n", y[j])
			j++
		default:
			fmt.Fprintf(c.out, "-%s\n", x[i])
			i++
		}
	}
	return 1
}

func cmdSeq(c *cmd, args []string) int {
	nums := make([]int, len(args))
	for i, a := range args {
		v, err := strconv.Atoi(a)
		if err != nil {
			return c.fail("invalid argument: '%s'", a)
		}
		nums[i] = v
	}
	first, step, last := 1, 1, 0
	switch len(nums) {
	case 1:
		last = nums[0]
	case 2:
		first, last = nums[0], nums[1]
	case 3:
		first, step, last = nums[0], nums[1], nums[2]
	default:
		return c.fail("usage: seq [FIRST [STEP]] LAST")
	}
	if step == 0 {
		return c.fail("step is zero")
	}
	for v := first; step > 0 && v <= last || step < 0 && v >= last; v += step {
		fmt.Fprintln(c.out, v)
	}
	return 0
}

func cmdDate(c *cmd, args []string) int {
	t := c.fs.now().UTC()
	for _, a := range args {
		if a == "+%s" {
			fmt.Fprintln(c.out, t.Unix())
			return 0
		}
		if strings.HasPrefix(a, "+") {
			r := strings.NewReplacer("%Y", "2006", "%m", "01", "%d", "02", "%H", "15", "%M", "04", "%S", "05", "%%", "%")
			fmt.Fprintln(c.out, t.Format(r.Replace(a[1:])))
			return 0
		}
	}
	fmt.Fprintln(c.out, t.Format(time.UnixDate))
	return 0
}

func cmdEnv(c *cmd, args []string) int {
	if len(args) > 0 {
		return c.fail("running a command through env is not supported in a world")
	}
	return cmdPrintenv(c, nil)
}

func cmdPrintenv(c *cmd, args []string) int {
	if len(args) > 0 {
		status := 0
		for _, a := range args {
			v := c.env.Get(a)
			if !v.IsSet() || !v.Exported {
				status = 1
				continue
			}
			fmt.Fprintln(c.out, v.String())
		}
		return status
	}
	for name, v := range c.env.Each {
		if v.Exported && v.IsSet() && v.Kind == expand.String {
			fmt.Fprintf(c.out, "%s=%s\n", name, v.Str)
		}
	}
	return 0
}

func cmdPrintf(c *cmd, args []string) int {
	if len(args) == 0 {
		return c.fail("usage: printf FORMAT [ARGUMENTS...]")
	}
	s, _, err := expand.Format(&expand.Config{}, args[0], args[1:])
	if err != nil {
		return c.failErr(err)
	}
	io.WriteString(c.out, s)
	return 0
}

func cmdBase64(c *cmd, args []string) int {
	set, files, _ := flags(args, "")
	b, st := c.inputs(files)
	if has(set, "d") {
		out, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(string(b)), ""))
		if err != nil {
			return c.fail("invalid input")
		}
		c.out.Write(out)
		return st
	}
	enc := base64.StdEncoding.EncodeToString(b)
	for len(enc) > 76 {
		fmt.Fprintln(c.out, enc[:76])
		enc = enc[76:]
	}
	fmt.Fprintln(c.out, enc)
	return st
}

func sumCmd(c *cmd, args []string, h func() hash.Hash) int {
	_, files, _ := flags(args, "")
	if len(files) == 0 {
		files = []string{"-"}
	}
	status := 0
	for _, f := range files {
		b, err := c.read(f)
		if err != nil {
			status = c.failErr(err)
			continue
		}
		s := h()
		s.Write(b)
		fmt.Fprintf(c.out, "%x  %s\n", s.Sum(nil), f)
	}
	return status
}

func cmdSha256(c *cmd, args []string) int { return sumCmd(c, args, sha256.New) }
func cmdMd5(c *cmd, args []string) int    { return sumCmd(c, args, md5.New) }

func cmdSleep(c *cmd, args []string) int {
	if len(args) != 1 {
		return c.fail("usage: sleep SECONDS")
	}
	f, err := strconv.ParseFloat(args[0], 64)
	if err != nil || f < 0 {
		return c.fail("invalid time interval '%s'", args[0])
	}
	select {
	case <-time.After(time.Duration(f * float64(time.Second))):
		return 0
	case <-c.ctx.Done():
		return 130
	}
}
