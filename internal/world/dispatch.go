package world

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

const (
	captureCmd = "forkbomb-world-capture"
	pwdCmd     = "forkbomb-world-pwd-physical"
)

// cmdPwdPhysical is pwd -P: $PWD with every link resolved in the world.
func cmdPwdPhysical(c *cmd) int {
	c.name = "pwd"
	p, err := c.fs.Realpath(c.abs(c.env.Get("PWD").String()))
	if err != nil {
		return c.failErr(err)
	}
	fmt.Fprintln(c.out, p)
	return 0
}

// exec runs a command that is neither a function nor a builtin: a Go command of the world, or
// "command not found". No name reaches a host binary, a path like /bin/ls included.
func (sh *shell) exec(ctx context.Context, args []string) error {
	inFlight.Add(1)
	defer inFlight.Add(-1)
	hc := interp.HandlerCtx(ctx)
	name := args[0]
	for _, pre := range []string{"/bin/", "/usr/bin/", "/usr/local/bin/"} {
		if strings.HasPrefix(name, pre) && !strings.Contains(name[len(pre):], "/") {
			name = name[len(pre):]
		}
	}
	c := &cmd{ctx: ctx, sh: sh, fs: sh.w.FS, dir: hc.Dir, env: hc.Env, in: hc.Stdin, out: hc.Stdout, err: hc.Stderr, name: name}
	if c.in == nil {
		c.in = strings.NewReader("")
	}
	var status int
	switch {
	case name == captureCmd && !sh.counting.Load():
		sh.captureVars(hc.Env)
	case name == lookupCmd:
		status = sh.lookup(c, args[1], args[2:])
	case name == pwdCmd:
		status = cmdPwdPhysical(c)
	default:
		fn := commands[name]
		if fn == nil {
			fmt.Fprintf(hc.Stderr, "%s: command not found\n", args[0])
			return interp.ExitStatus(127)
		}
		status = fn(c, args[1:])
	}
	if status != 0 {
		return interp.ExitStatus(uint8(status))
	}
	return nil
}

// lookup is type, hash and command -v/-V, answered from the world's functions, builtins and
// commands, never by a PATH search on the host.
func (sh *shell) lookup(c *cmd, verb string, args []string) int {
	mode := ""
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
		mode, args = args[0], args[1:]
	}
	if verb == "hash" {
		return 0
	}
	status := 0
	for _, a := range args {
		n := strings.TrimPrefix(strings.TrimPrefix(a, "/usr/bin/"), "/bin/")
		switch {
		case syntax.IsKeyword(a):
			c.say(verb, mode, a, "keyword", a+" is a shell keyword", a)
		case sh.r.Funcs[a] != nil:
			c.say(verb, mode, a, "function", a+" is a function", a)
		case interp.IsBuiltin(a):
			c.say(verb, mode, a, "builtin", a+" is a shell builtin", a)
		case commands[n] != nil:
			c.say(verb, mode, a, "file", a+" is /bin/"+n, "/bin/"+n)
		default:
			if verb == "type" && mode != "-t" {
				fmt.Fprintf(c.err, "type: %s: not found\n", a)
			}
			status = 1
		}
	}
	return status
}

func (c *cmd) say(verb, mode, name, kind, long, short string) {
	switch {
	case verb == "type" && mode == "-t":
		fmt.Fprintln(c.out, kind)
	case verb == "type" && (mode == "-p" || mode == "-P"):
		if kind == "file" {
			fmt.Fprintln(c.out, short)
		}
	case verb == "type" || mode == "-V":
		fmt.Fprintln(c.out, long)
	default:
		fmt.Fprintln(c.out, short)
	}
}

// restore defines the saved options, aliases and functions again before the script runs.
func (sh *shell) restore(ctx context.Context, r *interp.Runner) error {
	var b strings.Builder
	for _, o := range sh.w.State.Options {
		b.WriteString(o + "\n")
	}
	for _, a := range sh.w.State.Aliases {
		b.WriteString(a.Source + "\n")
	}
	for _, f := range sh.w.State.Functions {
		b.WriteString(f.Source + "\n")
	}
	if b.Len() == 0 {
		return nil
	}
	prelude, err := syntax.NewParser().Parse(strings.NewReader(b.String()), "")
	if err != nil {
		return fmt.Errorf("restore shell state: %w", err)
	}
	if err := r.Run(ctx, prelude); err != nil {
		return fmt.Errorf("restore shell state: %w", err)
	}
	return nil
}

// capture reads the state back out of the interpreter after the script.
func (sh *shell) capture(ctx context.Context, r *interp.Runner) error {
	var out bytes.Buffer
	if err := interp.StdIO(nil, &out, io.Discard)(r); err != nil {
		return fmt.Errorf("capture shell state: %w", err)
	}
	prog, err := syntax.NewParser().Parse(strings.NewReader("shopt -o\nshopt\n"+captureCmd+"\nalias\n"), "")
	if err != nil {
		return fmt.Errorf("capture shell state: %w", err)
	}
	if err := r.Run(ctx, prog); err != nil {
		return fmt.Errorf("capture shell state: %w", err)
	}
	st := &sh.w.State
	st.Cwd = r.Dir
	st.Options, st.Aliases, st.Functions = nil, nil, nil
	lines := strings.Split(out.String(), "\n")
	posix := true
	for _, l := range lines {
		if strings.HasPrefix(l, "alias ") {
			name, _, _ := strings.Cut(strings.TrimPrefix(l, "alias "), "=")
			st.Aliases = append(st.Aliases, Named{Name: name, Source: l})
			continue
		}
		f := strings.Split(l, "\t")
		if len(f) != 2 {
			continue
		}
		if f[0] == "allexport" {
			posix = true
		} else if f[0] == "dotglob" {
			posix = false
		}
		flag := "-u"
		if f[1] == "on" {
			flag = "-s"
		}
		if posix {
			st.Options = append(st.Options, "shopt -o "+flag+" "+f[0])
		} else {
			st.Options = append(st.Options, "shopt "+flag+" "+f[0])
		}
	}
	names := make([]string, 0, len(r.Funcs))
	for n := range r.Funcs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var src bytes.Buffer
		decl := &syntax.FuncDecl{Parens: true, Name: &syntax.Lit{Value: n}, Body: r.Funcs[n]}
		if err := syntax.NewPrinter().Print(&src, decl); err != nil {
			return fmt.Errorf("capture function %s: %w", n, err)
		}
		st.Functions = append(st.Functions, Named{Name: n, Source: src.String()})
	}
	st.Vars = sh.captured
	return nil
}

// skipVars are set by the interpreter itself or by every exec; keeping them would be wrong.
var skipVars = map[string]bool{"UID": true, "EUID": true, "GID": true, "PPID": true, "RANDOM": true,
	"SECONDS": true, "BASHPID": true, "SRANDOM": true, "EPOCHSECONDS": true, "EPOCHREALTIME": true,
	"DIRSTACK": true, "LINENO": true, "OPTIND": true}

func (sh *shell) captureVars(env expand.Environ) {
	sh.captured = nil
	// Each yields a name once per scope that holds it, outermost first: the last one is current.
	last := map[string]expand.Variable{}
	for name, v := range env.Each {
		last[name] = v
	}
	for name, v := range last {
		// The capture runs at the top level, so a variable marked local here is a global one
		// made by declare.
		if !v.Declared() || skipVars[name] || !validName(name) {
			continue
		}
		v.Local = false
		sh.captured = append(sh.captured, Var{Name: name, Variable: v})
	}
	sort.Slice(sh.captured, func(i, j int) bool { return sh.captured[i].Name < sh.captured[j].Name })
}

// cmd is what a Go command of the world gets: the world's filesystem and its own streams.
type cmd struct {
	ctx  context.Context
	sh   *shell
	fs   *FS
	dir  string
	env  expand.Environ
	in   io.Reader
	out  io.Writer
	err  io.Writer
	name string
}

func (c *cmd) abs(p string) string {
	if strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	return path.Join(c.dir, p)
}

func (c *cmd) fail(format string, a ...any) int {
	fmt.Fprintf(c.err, "%s: %s\n", c.name, fmt.Sprintf(format, a...))
	return 1
}

// failErr reports an error from the filesystem without the world's internals.
func (c *cmd) failErr(err error) int { return c.fail("%v", err) }

// open reads a file argument, "-" being stdin.
func (c *cmd) read(p string) ([]byte, error) {
	if p == "-" {
		return io.ReadAll(c.in)
	}
	return c.fs.ReadFile(c.abs(p))
}

// inputs concatenates the named files, or stdin when there are none.
func (c *cmd) inputs(files []string) ([]byte, int) {
	if len(files) == 0 {
		b, err := io.ReadAll(c.in)
		if err != nil {
			return nil, c.failErr(err)
		}
		return b, 0
	}
	var all []byte
	status := 0
	for _, f := range files {
		b, err := c.read(f)
		if err != nil {
			status = c.failErr(err)
			continue
		}
		all = append(all, b...)
	}
	return all, status
}
