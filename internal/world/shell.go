package world

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// Limits bound one exec; a zero field takes its default.
type Limits struct {
	MaxCommands int
	WallTime    time.Duration
	MaxOutput   int64 // stdout and stderr together
	MaxSize     int64 // bytes of file data in the world
}

// DefaultLimits are what an exec gets unless told otherwise.
var DefaultLimits = Limits{MaxCommands: 100_000, WallTime: 30 * time.Second, MaxOutput: 16 << 20, MaxSize: 256 << 20}

// WithDefaults is l with each limit not set (zero or less) taken from DefaultLimits.
func (l Limits) WithDefaults() Limits {
	if l.MaxCommands <= 0 {
		l.MaxCommands = DefaultLimits.MaxCommands
	}
	if l.WallTime <= 0 {
		l.WallTime = DefaultLimits.WallTime
	}
	if l.MaxOutput <= 0 {
		l.MaxOutput = DefaultLimits.MaxOutput
	}
	if l.MaxSize <= 0 {
		l.MaxSize = DefaultLimits.MaxSize
	}
	return l
}

// Result is how one exec ended.
type Result struct {
	Stdout, Stderr []byte
	Status         int
	// Limit names the limit that ended the exec; then nothing of the exec was kept.
	Limit string
	// Failed says why the exec could not run to its end (a panic, a worker that died); then
	// nothing of the exec was kept either, and Status is 125.
	Failed string
}

func limitError(what string, n int64) error {
	return fmt.Errorf("%w: %s (%d)", ErrLimit, what, n)
}

// noFifoDir is where the interpreter would make the FIFOs of a process substitution, and
// where it opens names with its FIFO prefix directly on the host (bypassing the open handler).
// Nobody can make a directory in /proc's root, so both fail with ENOENT on any host.
const noFifoDir = "/proc/forkbomb-world-has-no-fifos"

// worldEnv is the interpreter's initial environment: the saved variables and nothing of the host.
type worldEnv struct {
	vars  map[string]expand.Variable
	reset bool // Reset has read TMPDIR
}

func (e *worldEnv) Get(name string) expand.Variable {
	if name == "TMPDIR" && !e.reset {
		return expand.Variable{Set: true, Kind: expand.String, Str: noFifoDir}
	}
	if strings.HasPrefix(name, "HOME ") {
		// ~user: without this the expander looks the user up in the host's /etc/passwd.
		return expand.Variable{Set: true, Kind: expand.String, Str: "~" + strings.TrimPrefix(name, "HOME ")}
	}
	return e.vars[name]
}

func (e *worldEnv) Each(f func(string, expand.Variable) bool) {
	names := make([]string, 0, len(e.vars))
	for n := range e.vars {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !f(n, e.vars[n]) {
			return
		}
	}
}

// boundedWriter counts what both output streams wrote and ends the exec past the limit.
type boundedWriter struct {
	mu     *sync.Mutex
	buf    *bytes.Buffer
	total  *int64
	max    int64
	cancel context.CancelCauseFunc
}

func (w boundedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if *w.total+int64(len(b)) > w.max {
		room := w.max - *w.total
		if room > 0 {
			w.buf.Write(b[:room])
			*w.total += room
		}
		w.cancel(limitError("output bytes", w.max))
		return 0, limitError("output bytes", w.max)
	}
	*w.total += int64(len(b))
	return w.buf.Write(b)
}

// Exec runs script as one shell script in the world, changing w only when the script ran to
// its end (whatever its status): a syntax error keeps the state as it was, a limit discards the
// exec. The turn counter counts every exec that was not discarded.
//
// A panic in the interpreter or in a command on this goroutine is the exec's failure (Result.
// Failed), never the caller's crash; w is then in an unknown state and must not be saved. One
// in a pipeline stage's goroutine cannot be recovered here: the worker (worker.go) is what
// keeps that from ending a session.
func (w *World) Exec(ctx context.Context, script string, stdin io.Reader, lim Limits) (res Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = failedResult(fmt.Sprintf("panic: %v", v)), nil
		}
	}()
	lim = lim.WithDefaults()
	w.FS.maxSize = lim.MaxSize
	file, err := syntax.NewParser().Parse(strings.NewReader(script), "")
	if err == nil {
		err = checkTildeUser(file)
	}
	if err != nil {
		res.Stderr = []byte(err.Error() + "\n")
		res.Status = 2
		w.State.Turns++
		return res, nil
	}
	ctx, cancelTime := context.WithTimeoutCause(ctx, lim.WallTime, limitError("wall time in ms", lim.WallTime.Milliseconds()))
	defer cancelTime()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var mu sync.Mutex
	var total int64
	var stdout, stderr bytes.Buffer
	outW := boundedWriter{mu: &mu, buf: &stdout, total: &total, max: lim.MaxOutput, cancel: cancel}
	errW := boundedWriter{mu: &mu, buf: &stderr, total: &total, max: lim.MaxOutput, cancel: cancel}
	// The interpreter turns a stdin that is not an *os.File into a pipe it never closes: one
	// descriptor lost per exec, which a long session (an MCP server, a worker) runs out of.
	// The pipe is made here and closed when the exec ends.
	pr, pw, err := os.Pipe()
	if err != nil {
		return res, fmt.Errorf("make shell: %w", err)
	}
	defer pr.Close()
	go func() {
		if stdin != nil {
			io.Copy(pw, stdin) // ends when the script is done with it or pr is closed
		}
		pw.Close()
	}()
	sh := &shell{w: w, maxCommands: int64(lim.MaxCommands), cancel: cancel}
	r, env, err := sh.runner(pr, outW, errW)
	if err != nil {
		return res, err
	}
	if err := sh.restore(ctx, r); err != nil {
		return res, err
	}
	sh.counting.Store(true)
	runErr := r.Run(ctx, file)
	sh.counting.Store(false)
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) || w.FS.overLimit != nil {
		if w.FS.overLimit != nil {
			cause = limitError("world size in bytes", lim.MaxSize)
		}
		res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
		res.Limit = cause.Error()
		res.Stderr = append(res.Stderr, []byte("forkbomb world: "+res.Limit+"; nothing of this exec was kept\n")...)
		res.Status = 124
		return res, nil
	}
	var status uint8
	if runErr != nil {
		var st interp.ExitStatus
		if errors.As(runErr, &st) {
			status = uint8(st)
		} else {
			fmt.Fprintf(errW, "%v\n", runErr)
			status = 1
		}
	}
	_ = env
	if err := sh.capture(context.WithoutCancel(ctx), r); err != nil {
		return res, err
	}
	w.State.Turns++
	res.Stdout, res.Stderr, res.Status = stdout.Bytes(), stderr.Bytes(), int(status)
	return res, nil
}

// shell is one exec's interpreter and its handlers.
type shell struct {
	w           *World
	r           *interp.Runner
	maxCommands int64
	// A pipeline's stages and background jobs call the handlers from goroutines of their own.
	commands atomic.Int64
	counting atomic.Bool
	cancel   context.CancelCauseFunc
	captured []Var
}

func (sh *shell) runner(stdin *os.File, stdout, stderr io.Writer) (*interp.Runner, *worldEnv, error) {
	env := &worldEnv{vars: map[string]expand.Variable{}}
	for _, v := range sh.w.State.Vars {
		env.vars[v.Name] = v.Variable
	}
	for _, id := range []string{"UID", "EUID", "GID"} {
		env.vars[id] = expand.Variable{Set: true, ReadOnly: true, Kind: expand.String, Str: "1000"}
	}
	if _, ok := env.vars["HOME"]; !ok {
		env.vars["HOME"] = expand.Variable{Set: true, Exported: true, Kind: expand.String, Str: "/work"}
	}
	cwd := sh.w.State.Cwd
	if st, err := sh.w.FS.Stat(cwd, true); err != nil || !st.IsDir() {
		cwd = "/work"
	}
	r, err := interp.New(
		interp.Env(env),
		// Not interp.Dir: it stats the path on the host.
		func(r *interp.Runner) error { r.Dir = cwd; return nil },
		interp.StdIO(stdin, stdout, stderr),
		interp.CallHandler(sh.call),
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc { return sh.exec }),
		interp.OpenHandler(sh.open),
		interp.ReadDirHandler2(func(ctx context.Context, p string) ([]fs.DirEntry, error) {
			return sh.w.FS.ReadDir(handlerPath(ctx, p))
		}),
		interp.StatHandler(func(ctx context.Context, p string, follow bool) (fs.FileInfo, error) {
			st, err := sh.w.FS.Stat(handlerPath(ctx, p), follow)
			if err != nil {
				return nil, err
			}
			return ownedInfo{st}, nil
		}),
		interp.AccessHandler(sh.access),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("make shell: %w", err)
	}
	r.Reset()
	env.reset = true
	sh.r = r
	return r, env, nil
}

// handlerPath makes a path the interpreter hands a handler absolute in the world: some are
// relative to the shell's directory (a redirection's), which is a world path, never the host's.
func handlerPath(ctx context.Context, p string) string {
	if strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	return path.Join(interp.HandlerCtx(ctx).Dir, p)
}

func (sh *shell) open(ctx context.Context, p string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
	p = handlerPath(ctx, p)
	if p == "/dev/null" {
		return devNull{}, nil
	}
	return sh.w.FS.Open(p, flag, perm)
}

// access answers test -r/-w/-x and cd's check from the world's modes (the world has one user).
func (sh *shell) access(ctx context.Context, p string, mode interp.AccessMode) error {
	st, err := sh.w.FS.Stat(handlerPath(ctx, p), true)
	if err != nil {
		return err
	}
	perm := st.Mode().Perm()
	var bit fs.FileMode
	switch mode {
	case interp.AccessRead:
		bit = 0o400
	case interp.AccessWrite:
		bit = 0o200
	case interp.AccessExec:
		bit = 0o100
	}
	if perm&bit == 0 {
		return &fs.PathError{Op: "access", Path: p, Err: fs.ErrPermission}
	}
	return nil
}

type devNull struct{}

func (devNull) Read([]byte) (int, error)    { return 0, io.EOF }
func (devNull) Write(b []byte) (int, error) { return len(b), nil }
func (devNull) Close() error                { return nil }

// call counts commands and keeps the interpreter's own host lookups (type, command -v,
// pwd -P, source's $PATH search) off the host: each is answered from the world instead. The
// wrappers builtin and command reach the same builtins, so they are looked through (issue 21:
// `builtin type`, `command -vv`, `command eval` went around a check made on args[0] alone).
func (sh *shell) call(ctx context.Context, args []string) ([]string, error) {
	if sh.counting.Load() {
		if sh.commands.Add(1) > sh.maxCommands {
			err := limitError("commands", int64(sh.maxCommands))
			sh.cancel(err)
			return nil, err
		}
	}
	inner := args
	for len(inner) > 1 {
		switch inner[0] {
		case "builtin":
			inner = inner[1:]
			continue
		case "command":
			i := 1
			show := false
			for ; i < len(inner) && len(inner[i]) > 1 && inner[i][0] == '-' && inner[i] != "--"; i++ {
				show = show || strings.ContainsAny(inner[i], "vV")
			}
			if i < len(inner) && inner[i] == "--" {
				i++
			}
			if show {
				// command -v/-V NAME… is a lookup whatever else the flags say.
				return append([]string{lookupCmd, "command", "-v"}, inner[i:]...), nil
			}
			if i < len(inner) {
				inner = inner[i:]
				continue
			}
		}
		break
	}
	if err := checkDynamic(inner); err != nil {
		return nil, err
	}
	switch inner[0] {
	case "source", ".":
		if len(inner) > 1 {
			p := sh.sourcePath(ctx, inner[1])
			if b, err := sh.w.FS.ReadFile(p); err == nil {
				if f, err := syntax.NewParser().Parse(bytes.NewReader(b), ""); err == nil {
					if err := checkTildeUser(f); err != nil {
						return nil, err
					}
				}
			}
			// An absolute world path: the interpreter's own search of $PATH would stat host
			// folders ("PATH=/etc; source passwd" told whether a host file exists).
			out := append([]string{}, args[:len(args)-len(inner)+1]...)
			return append(append(out, p), inner[2:]...), nil
		}
	case "type", "hash":
		return append([]string{lookupCmd, inner[0]}, inner[1:]...), nil
	case "pwd":
		for _, a := range inner[1:] {
			if strings.HasPrefix(a, "-") && strings.Contains(a, "P") {
				// pwd -P resolves links with filepath.EvalSymlinks, on the host.
				return []string{pwdCmd}, nil
			}
		}
	}
	return args, nil
}

// sourcePath is where source NAME reads from, in the world: NAME when it holds a slash (from
// the shell's directory), else the first regular file NAME in the world's $PATH, else NAME in
// the shell's directory (bash's order).
func (sh *shell) sourcePath(ctx context.Context, name string) string {
	if strings.Contains(name, "/") {
		return handlerPath(ctx, name)
	}
	hc := interp.HandlerCtx(ctx)
	for _, dir := range strings.Split(hc.Env.Get("PATH").String(), ":") {
		if dir == "" {
			continue
		}
		p := handlerPath(ctx, path.Join(dir, name))
		if st, err := sh.w.FS.Stat(p, true); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return handlerPath(ctx, name)
}

const lookupCmd = "forkbomb-world-lookup"
