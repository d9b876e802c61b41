package world

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/benhoyt/goawk/interp"
	"github.com/benhoyt/goawk/parser"
	"github.com/itchyny/gojq"
)

// cmdAwk runs GoAWK with system(), pipes, file reads and writes off and ENVIRON from the world:
// left to its defaults it would read the host's files, run /bin/sh and copy os.Environ.
func cmdAwk(c *cmd, args []string) int {
	set, rest, err := flags(args, "Fv")
	if err != nil || len(rest) == 0 {
		return c.fail("usage: awk [-F SEP] [-v VAR=VAL] PROGRAM [FILE...]")
	}
	prog, err := parser.ParseProgram([]byte(rest[0]), nil)
	if err != nil {
		c.fail("%v", err)
		return 2
	}
	in, st := c.inputs(rest[1:])
	var environ []string
	for name, v := range c.env.Each {
		if v.Exported && v.IsSet() {
			environ = append(environ, name, v.String())
		}
	}
	cfg := &interp.Config{Stdin: bytes.NewReader(in), Output: c.out, Error: c.err, Environ: environ,
		NoExec: true, NoFileWrites: true, NoFileReads: true, Args: []string{}}
	if fs, ok := set['F']; ok {
		cfg.Vars = append(cfg.Vars, "FS", fs)
	}
	if v, ok := set['v']; ok {
		name, val, _ := strings.Cut(v, "=")
		cfg.Vars = append(cfg.Vars, name, val)
	}
	status, err := interp.ExecProgram(prog, cfg)
	if err != nil {
		c.fail("%v", err)
		return 2
	}
	if st != 0 {
		return st
	}
	return status
}

func cmdJq(c *cmd, args []string) int {
	set, rest, err := flags(args, "")
	if err != nil || len(rest) == 0 {
		return c.fail("usage: jq [-rcns] FILTER [FILE...]")
	}
	q, err := gojq.Parse(rest[0])
	if err != nil {
		c.fail("%v", err)
		return 3
	}
	code, err := gojq.Compile(q)
	if err != nil {
		c.fail("%v", err)
		return 3
	}
	var inputs []any
	if has(set, "n") {
		inputs = []any{nil}
	} else {
		b, st := c.inputs(rest[1:])
		if st != 0 {
			return 2
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		for {
			var v any
			if err := dec.Decode(&v); err == io.EOF {
				break
			} else if err != nil {
				c.fail("parse error: %v", err)
				return 2
			}
			inputs = append(inputs, normalizeNumbers(v))
		}
		if has(set, "s") {
			inputs = []any{inputs}
		}
	}
	status := 0
	for _, in := range inputs {
		iter := code.RunWithContext(c.ctx, in)
		for {
			v, ok := iter.Next()
			if !ok {
				break
			}
			if err, ok := v.(error); ok {
				c.fail("error: %v", err)
				status = 5
				break
			}
			if s, ok := v.(string); ok && has(set, "r") {
				fmt.Fprintln(c.out, s)
				continue
			}
			var out []byte
			if has(set, "c") {
				out, _ = gojq.Marshal(v)
			} else {
				out, _ = json.MarshalIndent(v, "", "  ")
			}
			fmt.Fprintln(c.out, string(out))
		}
	}
	return status
}

func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.Atoi(x.String()); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = normalizeNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normalizeNumbers(x[k])
		}
	}
	return v
}

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

func cmdGzip(c *cmd, args []string) int {
	set, files, _ := flags(args, "")
	if has(set, "d") {
		return cmdGunzip(c, files)
	}
	if len(files) == 0 || has(set, "c") {
		b, st := c.inputs(files)
		zw := gzip.NewWriter(c.out)
		zw.Write(b)
		zw.Close()
		return st
	}
	status := 0
	for _, f := range files {
		b, err := c.read(f)
		if err != nil {
			status = c.failErr(err)
			continue
		}
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(b)
		zw.Close()
		if err := c.fs.WriteFile(c.abs(f)+".gz", z.Bytes(), 0o644); err != nil {
			status = c.failErr(err)
			continue
		}
		_ = c.fs.Remove(c.abs(f), false)
	}
	return status
}

func gunzipBytes(b []byte, limit int64) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	// A gzip bomb stops at the world's size limit rather than at the host's memory.
	out, err := io.ReadAll(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(out)) > limit {
		return nil, limitError("world size in bytes", limit)
	}
	return out, nil
}

func cmdGunzip(c *cmd, args []string) int {
	set, files, _ := flags(args, "")
	limit := c.fs.maxSize
	if limit <= 0 {
		limit = DefaultLimits.MaxSize
	}
	if len(files) == 0 || has(set, "c") {
		b, st := c.inputs(files)
		out, err := gunzipBytes(b, limit)
		if err != nil {
			return c.failErr(err)
		}
		c.out.Write(out)
		return st
	}
	status := 0
	for _, f := range files {
		b, err := c.read(f)
		if err != nil {
			status = c.failErr(err)
			continue
		}
		out, err := gunzipBytes(b, limit)
		if err != nil {
			status = c.failErr(err)
			continue
		}
		if err := c.fs.WriteFile(strings.TrimSuffix(c.abs(f), ".gz"), out, 0o644); err != nil {
			status = c.failErr(err)
			continue
		}
		_ = c.fs.Remove(c.abs(f), false)
	}
	return status
}

// cmdTar supports -c, -x, -t with -f and -z, and -C; members stay inside the world by
// construction (there is nothing else), and ".." in a member name is refused anyway.
func cmdTar(c *cmd, args []string) int {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		args[0] = "-" + args[0]
	}
	set, rest, err := flags(args, "fC")
	if err != nil {
		return c.failErr(err)
	}
	base := c.dir
	if d, ok := set['C']; ok {
		base = c.abs(d)
	}
	at := func(p string) string { return path.Join(base, p) }
	switch {
	case has(set, "c"):
		var buf bytes.Buffer
		var w io.Writer = &buf
		var zw *gzip.Writer
		if has(set, "z") {
			zw = gzip.NewWriter(&buf)
			w = zw
		}
		tw := tar.NewWriter(w)
		for _, r := range rest {
			if err := c.tarAdd(tw, at(r), r); err != nil {
				return c.failErr(err)
			}
		}
		tw.Close()
		if zw != nil {
			zw.Close()
		}
		if f, ok := set['f']; ok && f != "-" {
			if err := c.fs.WriteFile(c.abs(f), buf.Bytes(), 0o644); err != nil {
				return c.failErr(err)
			}
			return 0
		}
		c.out.Write(buf.Bytes())
		return 0
	case has(set, "x"), has(set, "t"):
		f := set['f']
		if f == "" {
			f = "-"
		}
		b, err := c.read(f)
		if err != nil {
			return c.failErr(err)
		}
		if has(set, "z") {
			limit := c.fs.maxSize
			if limit <= 0 {
				limit = DefaultLimits.MaxSize
			}
			if b, err = gunzipBytes(b, limit); err != nil {
				return c.failErr(err)
			}
		}
		tr := tar.NewReader(bytes.NewReader(b))
		for {
			h, err := tr.Next()
			if err == io.EOF {
				return 0
			}
			if err != nil {
				return c.failErr(err)
			}
			if has(set, "t") {
				fmt.Fprintln(c.out, h.Name)
				continue
			}
			for _, comp := range strings.Split(h.Name, "/") {
				if comp == ".." {
					return c.fail("%s: member name contains '..'", h.Name)
				}
			}
			dst := at(h.Name)
			var werr error
			switch h.Typeflag {
			case tar.TypeDir:
				werr = c.fs.MkdirAll(dst, fromPosix(uint32(h.Mode)))
			case tar.TypeSymlink:
				werr = c.fs.Symlink(h.Linkname, dst)
			case tar.TypeLink:
				werr = c.fs.Link(at(h.Linkname), dst)
			case tar.TypeReg:
				data, err := io.ReadAll(tr)
				if err != nil {
					return c.failErr(err)
				}
				_ = c.fs.MkdirAll(path.Dir(dst), 0o755)
				werr = c.fs.WriteFile(dst, data, fromPosix(uint32(h.Mode)))
			default:
				c.fail("%s: skipping unsupported member type", h.Name)
			}
			if werr != nil {
				return c.failErr(werr)
			}
			_ = c.fs.Chtimes(dst, h.ModTime)
		}
	}
	return c.fail("need one of -c, -x, -t")
}

func (c *cmd) tarAdd(tw *tar.Writer, abs, name string) error {
	st, err := c.fs.Stat(abs, false)
	if err != nil {
		return err
	}
	h := &tar.Header{Name: name, Mode: int64(toPosix(st.Mode())), ModTime: st.ModTime(), Format: tar.FormatPAX}
	switch {
	case st.IsDir():
		h.Typeflag, h.Name = tar.TypeDir, strings.TrimSuffix(name, "/")+"/"
	case st.Mode()&0o170000 != 0 || st.Mode().Type() != 0:
		h.Typeflag = tar.TypeSymlink
		h.Linkname, _ = c.fs.Readlink(abs)
	default:
		h.Typeflag, h.Size = tar.TypeReg, st.Size()
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if h.Typeflag == tar.TypeReg {
		b, err := c.fs.ReadFile(abs)
		if err != nil {
			return err
		}
		tw.Write(b)
	}
	if st.IsDir() {
		ents, _ := c.fs.ReadDir(abs)
		for _, e := range ents {
			if err := c.tarAdd(tw, path.Join(abs, e.Name()), path.Join(name, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}
