package world

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"path"
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
	// With the exec's context: GoAWK checks it in its loops (issue 21: BEGIN{while(1){}}
	// ran on past --timeout).
	ai, err := interp.New(prog)
	if err != nil {
		c.fail("%v", err)
		return 2
	}
	status, err := ai.ExecuteContext(c.ctx, cfg)
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
