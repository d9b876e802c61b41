package world

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/world/workerproc"
)

// The world's interpreter runs in a worker: the slim forkbomb-world of the same build beside
// this binary (workerbin.go), else this binary re-executed (the world package's init dispatches
// on workerproc.Arg, so forkbomb, forkbomb-full and every test binary that links worlds serve
// as their own worker with no change to their main). On Linux the worker confines itself
// before it reads a request — Landlock with no filesystem right and no TCP, a seccomp filter
// that denies every path call, exec and socket, no_new_privs, rlimits, an empty environment —
// so a hook the world's code misses fails closed in the kernel instead of answering from the
// host. What it reads before that is the trusted side's header: the build's fingerprint, which
// it checks first, and its data limit.
//
// The trusted side keeps everything that touches the host: the lock, the read of the file, the
// decode of what comes back (hostile data: the full decoder) and the atomic save. The worker
// gets the world's bytes, the script, its stdin and limits, and answers with the result and the
// world's new bytes. A worker is started once per Runner (an MCP server, a race's branch, a
// drive) and replaced when it dies, times out or may still be running something.

// workerGrace is how long past an exec's wall time the trusted side waits for the worker's
// answer before it kills the worker: a command that cannot be interrupted is abandoned there.
const workerGrace = 500 * time.Millisecond

// statusFailed is an exec that could not run to an end: a panic in the interpreter or in a
// command, or a worker that died. Nothing of it is kept.
const statusFailed = 125

// workerHello is the worker's first line, written once it is confined and has checked its
// build: a worker that ends before it has run nothing. A slim worker that does (another
// build, another program at its name, one that cannot confine itself) is not used again, and
// the trusted side runs the exec in a worker of its own binary instead.
const workerHello = "forkbomb-world-worker ready\n"

func init() { WorkerMain() }

// WorkerMain serves as the world's worker, and exits, when this process was started as one; it
// returns otherwise. Every binary that links worlds runs it at init; cmd/forkbomb-world, the
// slim worker, calls it from main.
func WorkerMain() {
	if len(os.Args) > 1 && os.Args[1] == workerproc.Arg {
		os.Exit(workerMain())
	}
}

// inFlight counts the world's commands running in this process; a worker that answers while
// one is still running (a background job, a stage abandoned at the deadline) is retired.
var inFlight atomic.Int64

// bareInterpreter runs a script with mvdan.cc/sh's default handlers, over the host; it is set
// only in test binaries (export_test.go), whose worker then proves what the kernel layer stops
// on its own.
var bareInterpreter func(ctx context.Context, script string, stdin io.Reader, stdout, stderr io.Writer) int

// workerHooks run first in a worker: a test binary registers its test-only commands there.
var workerHooks []func()

func workerMain() int {
	for _, h := range workerHooks {
		h()
	}
	// Worlds are the same wherever they run: no host time zone (and no read of /etc/localtime).
	time.Local = time.UTC
	// The build's fingerprint is computed while the header is on its way: a worker started
	// early (a world exec's, at forkbomb's init) waits for it anyway.
	go fingerprint()
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	h, err := readHeader(in)
	if err != nil {
		fmt.Fprintf(os.Stderr, "forkbomb world worker: %v\n", err)
		return 2
	}
	// One of another build says so and runs nothing.
	if !sandbox.SameFingerprint(h.Fingerprint, fingerprint()) {
		fmt.Fprintf(os.Stderr, "forkbomb world worker: %s is not of the build that started it\n", WorkerName)
		return 3
	}
	if err := confineWorker(h.Data); err != nil {
		fmt.Fprintf(os.Stderr, "forkbomb world worker: %v\n", err)
		return 3
	}
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	if _, err := out.WriteString(workerHello); err != nil {
		return 2
	}
	for {
		q, err := readRequest(in)
		if errors.Is(err, io.EOF) {
			return 0
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "forkbomb world worker: %v\n", err)
			return 2
		}
		p := serve(q)
		// A command still running (a background job, a stage abandoned at the deadline) would
		// go on in the next exec's time: this worker answers and leaves, and what it leaves
		// running dies with it.
		p.Retire = inFlight.Load() != 0
		if err := writeResponse(out, p); err != nil || p.Retire {
			return 0
		}
	}
}

// serve runs one request; a panic is the request's failure, not the worker's end.
func serve(q *workRequest) (p *workResponse) {
	defer func() {
		if v := recover(); v != nil {
			p = &workResponse{Result: failedResult(fmt.Sprintf("panic: %v", v))}
		}
	}()
	lim := q.Limits.WithDefaults()
	if q.Bare {
		if bareInterpreter == nil {
			return &workResponse{Result: failedResult("no bare interpreter in this binary")}
		}
		ctx, cancel := context.WithTimeout(context.Background(), lim.WallTime)
		defer cancel()
		var stdout, stderr bytes.Buffer
		st := bareInterpreter(ctx, q.Script, bytes.NewReader(q.Stdin), &stdout, &stderr)
		return &workResponse{Result: Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Status: st}}
	}
	w, err := Decode(q.World, lim.MaxSize)
	if err != nil {
		return &workResponse{Result: failedResult(err.Error())}
	}
	q.World = nil
	res, err := w.Exec(context.Background(), q.Script, bytes.NewReader(q.Stdin), q.Limits)
	if err != nil {
		return &workResponse{Result: failedResult(err.Error())}
	}
	p = &workResponse{Result: res}
	if res.Limit == "" && res.Failed == "" {
		if p.World, err = w.Encode(); err != nil {
			return &workResponse{Result: failedResult(err.Error())}
		}
	}
	return p
}

// failedResult is an exec that could not run to its end.
func failedResult(why string) Result {
	why = oneLine(why)
	return Result{Status: statusFailed, Failed: why,
		Stderr: []byte("forkbomb world: the shell failed: " + why + "; nothing of this exec was kept\n")}
}

// oneLine keeps the first line of a message, printable, bounded.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}

// Runner runs execs in a worker process, started on first use and replaced when it dies. Its
// calls run one after the other. The zero value is ready; Close ends the worker.
type Runner struct {
	mu   sync.Mutex
	proc *workerProc
	once bool // NewRunnerOnce
	bare bool // tests only
}

// NewRunner returns a Runner.
func NewRunner() *Runner { return &Runner{} }

// NewRunnerOnce returns a Runner for one exec (`forkbomb world exec`): its worker's stdin is
// closed once the request is written, so the worker ends on its own after its answer, while
// the answer is decoded and saved, and Close finds it gone instead of waiting for its end. A
// second exec works, in a worker of its own.
func NewRunnerOnce() *Runner { return &Runner{once: true} }

// Close ends the worker, if one runs.
func (r *Runner) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc != nil {
		r.proc.kill()
		r.proc = nil
	}
}

type workerProc struct {
	proc *workerproc.Proc
	slim *workerBin // the slim worker it runs, nil for this binary
	// greeted: the worker's hello was read (hello)
	greeted bool
	// last: its one request is sent and its stdin closed (NewRunnerOnce); it serves no other
	last   bool
	in     *bufio.Writer
	out    *bufio.Reader
	head   *headWriter
	exited chan struct{}
}

// workerData is the worker's RLIMIT_DATA: room for the world several times over (decoded,
// encoded, the output) and the runtime.
func workerData(maxSize int64) int64 { return max(2<<30, 8*maxSize) }

// startWorker starts the slim worker slim, or this binary when slim is nil, and sends it its
// header.
func startWorker(l Limits, slim *workerBin) (*workerProc, error) {
	exe, err := selfExe()
	if slim != nil {
		exe = slim.exe()
	}
	var wp *workerproc.Proc
	if slim != nil {
		wp = workerproc.TakePrestarted(slim.slim) // a `world exec`'s, started at init
	}
	if wp == nil && err == nil {
		wp, err = workerproc.Start(exe)
	}
	if err != nil {
		return nil, fmt.Errorf("start world worker: %w", err)
	}
	p := &workerProc{proc: wp, slim: slim, in: bufio.NewWriterSize(wp.Stdin, 64<<10),
		out: bufio.NewReaderSize(wp.Stdout, 64<<10), head: &headWriter{max: 4 << 10}, exited: make(chan struct{})}
	go func() {
		io.Copy(p.head, wp.Stderr) // until the worker's end: its last words are kept before exited
		wp.Stderr.Close()
		wp.Process.Wait()
		close(p.exited)
	}()
	// A pipe's buffer holds the header whatever the worker does, so this never waits on it.
	// It fails only when the worker has already ended: the hello that never comes then says
	// so, with the worker's own last words (exec).
	writeHeader(p.in, workHeader{Fingerprint: fingerprint(), Data: workerData(l.MaxSize)})
	return p, nil
}

// kill ends the worker, if it still runs, and closes its pipes; every worker a Runner drops
// ends here.
func (p *workerProc) kill() {
	p.proc.Process.Kill()
	p.proc.Stdin.Close()
	<-p.exited
	p.proc.Stdout.Close()
}

// errNoHello is a worker that ended, or said something else, before its hello.
type errNoHello struct{ error }

func (e errNoHello) Unwrap() error { return e.error }

// hello reads the worker's first line, once.
func (p *workerProc) hello() error {
	if p.greeted {
		return nil
	}
	line, err := p.out.ReadString('\n')
	if err != nil {
		return err
	}
	if line != workerHello {
		return fmt.Errorf("it said %q, not the worker's hello", oneLine(line))
	}
	p.greeted = true
	return nil
}

// why says how a worker that stopped answering ended.
func (p *workerProc) why(err error) string {
	select {
	case <-p.exited:
	case <-time.After(workerGrace):
	}
	p.kill()
	msg := "the world's worker stopped: " + err.Error()
	if t := strings.TrimSpace(p.head.String()); t != "" {
		// The first line of a Go panic names it ("panic: …"); the rest is a stack.
		msg = t
		if i := strings.Index(t, "panic: "); i >= 0 {
			msg = t[i:]
		}
	}
	return msg
}

// start starts the worker unless one runs; r.mu is held.
func (r *Runner) start(l Limits) error {
	if r.proc != nil {
		select {
		case <-r.proc.exited:
		default:
			if !r.proc.last {
				return nil
			}
		}
		r.proc.kill()
		r.proc = nil
	}
	slim := slimWorker()
	if !slim.usable() || r.bare {
		slim = nil
	}
	p, err := startWorker(l, slim)
	if err != nil && slim != nil {
		slim.refuse(err.Error())
		p, err = startWorker(l, nil)
	}
	if err != nil {
		return err
	}
	r.proc = p
	return nil
}

// Exec runs script in the world encoded as world, in the worker. It returns the result and,
// when the exec ran to its end, the world's new bytes — as the worker sent them: the caller
// decodes them before it trusts them. A panic, a dead worker or an exec past its wall time
// (plus workerGrace, when the worker does not answer) is a Result, not an error; an error is
// a worker that could not be started, or ctx ending (the worker is then killed at once).
func (r *Runner) Exec(ctx context.Context, world []byte, script string, stdin []byte, l Limits) (Result, []byte, error) {
	l = l.WithDefaults()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exec(ctx, world, script, stdin, l)
}

// exec is Exec with r.mu held.
func (r *Runner) exec(ctx context.Context, world []byte, script string, stdin []byte, l Limits) (Result, []byte, error) {
	if err := r.start(l); err != nil {
		return Result{}, nil, err
	}
	p := r.proc
	p.last = r.once
	type answer struct {
		resp *workResponse
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		q := &workRequest{Limits: l, Bare: r.bare, Script: script, Stdin: stdin, World: world}
		// The request is written while the worker starts: a worker that ends before its
		// hello has read none of it.
		werr := writeRequest(p.in, q)
		if p.last {
			p.proc.Stdin.Close() // the worker's next read is its end (workerMain)
		}
		if err := p.hello(); err != nil {
			done <- answer{nil, errNoHello{err}}
			return
		}
		if werr != nil {
			done <- answer{nil, werr}
			return
		}
		resp, err := readResponse(p.out, l)
		done <- answer{resp, err}
	}()
	timer := time.NewTimer(l.WallTime + workerGrace)
	defer timer.Stop()
	select {
	case a := <-done:
		if a.err != nil {
			r.proc = nil
			why := p.why(a.err)
			if errors.As(a.err, new(errNoHello)) && p.slim != nil { // it ran nothing
				p.slim.refuse(why)
				return r.exec(ctx, world, script, stdin, l)
			}
			return failedResult(why), nil, nil
		}
		if a.resp.Retire {
			r.proc = nil
			go p.kill()
		}
		return a.resp.Result, a.resp.World, nil
	case <-timer.C:
		r.proc = nil
		p.kill()
		<-done
		res := Result{Status: 124, Limit: limitError("wall time in ms", l.WallTime.Milliseconds()).Error()}
		res.Stderr = []byte("forkbomb world: " + res.Limit + "; nothing of this exec was kept\n")
		return res, nil, nil
	case <-ctx.Done():
		r.proc = nil
		p.kill()
		<-done
		return Result{}, nil, fmt.Errorf("world exec: %w", ctx.Err())
	}
}

// Start starts the worker now, unless one runs, so that its start overlaps the caller's own
// work (reading stdin, taking the lock).
func (r *Runner) Start(l Limits) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.start(l.WithDefaults())
}

// ExecFile runs one script in the world at file, under its lock, in the worker, and saves
// what the script left unless a limit or a failure ended it. The file is read afresh every
// call; what the worker sends back is decoded in full before it is written. The file itself is
// decoded here only when the worker could not run the script to its end: the worker decodes it
// anyway (and it cannot harm the worker), and a file it could not read then fails as the load it
// is.
func (r *Runner) ExecFile(ctx context.Context, file, script string, stdin []byte, l Limits) (Result, error) {
	l = l.WithDefaults()
	if err := r.Start(l); err != nil { // the worker starts while the lock is taken and the file read
		return Result{}, err
	}
	unlock, err := Lock(ctx, file)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	b, err := readFile(file)
	if err != nil {
		return Result{}, err
	}
	if err := tooLarge(b); err != nil {
		return Result{}, fmt.Errorf("load %s: %w", file, err)
	}
	res, nb, err := r.Exec(ctx, b, script, stdin, l)
	if err == nil && (res.Failed != "" || res.Limit != "") {
		// a file the worker could not read (or not within the exec's limits) fails as a load
		if _, derr := Decode(b, l.MaxSize); derr != nil {
			return Result{}, fmt.Errorf("load %s: %w", file, derr)
		}
	}
	if err != nil || res.Limit != "" || res.Failed != "" {
		return res, err
	}
	if _, err := Decode(nb, l.MaxSize); err != nil {
		return res, fmt.Errorf("world exec: the worker's world: %w", err)
	}
	return res, writeAtomic(file, nb)
}

// ExecFile runs one script in the world at file in a worker of its own (see Runner.ExecFile).
// stdin is read first, at most the world's size limit.
func ExecFile(ctx context.Context, file, script string, stdin io.Reader, l Limits) (Result, error) {
	l = l.WithDefaults()
	var in []byte
	if stdin != nil {
		b, err := io.ReadAll(io.LimitReader(stdin, l.MaxSize+1))
		if err != nil {
			return Result{}, fmt.Errorf("world exec: stdin: %w", err)
		}
		if int64(len(b)) > l.MaxSize {
			return Result{}, limitError("stdin bytes", l.MaxSize)
		}
		in = b
	}
	r := NewRunnerOnce()
	defer r.Close()
	return r.ExecFile(ctx, file, script, in, l)
}

// headWriter keeps the first max bytes written to it (a panic's message comes first).
type headWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (t *headWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - t.buf.Len(); room > 0 {
		t.buf.Write(b[:min(room, len(b))])
	}
	return len(b), nil
}

func (t *headWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
