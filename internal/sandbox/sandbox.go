package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Exit statuses with a meaning of their own. Every other status is the
// command's.
const (
	ExitTimeout         = 124 // the wall-clock limit expired
	ExitSetup           = 125 // forkbomb could not run the command at all
	ExitNotExecutable   = 126
	ExitNotFound        = 127
	ExitKilledByLimit   = 137 // a memory, process or output limit killed it (128+SIGKILL)
	ExitInterruptedBase = 128 // plus the signal that interrupted forkbomb
)

// Stdio are the command's standard streams. When they are *os.File and no
// output cap is set, the command gets the files themselves (so a terminal
// stays a terminal); otherwise forkbomb copies through pipes.
type Stdio struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Trace, when set, receives the start-up trace (trace.go): the
	// parent's phases here, the init's on Stderr.
	Trace io.Writer
}

// Result is what happened to a confined command.
type Result struct {
	ExitCode int
	Mode     Mode     // the backend that ran it
	TimedOut bool     // the timeout expired
	Limit    string   // "memory", "pids" or "output" when a limit killed it (see LimitReason)
	Warnings []string // limits that could not be enforced, fallbacks taken
	// Init is the program that served as the sandbox's init: the path of
	// a standalone forkbomb-init, or /proc/self/exe (initbin_linux.go).
	Init string
	// CPU is the processor time (user and system) of the sandbox's init
	// and of every process below it that was waited for — the command
	// and what it started and waited for — as the kernel counts it for
	// a reaped child: what the run took of the machine, where its wall
	// time says how long it took.
	CPU time.Duration

	probe *ProbeReport
}

// Run runs p.Command confined by p. The returned error is non-nil only when
// the command could not be run at all (ErrInvalidPolicy, ErrSetup,
// ErrUnsupported, ErrCommandNotFound, ErrCommandNotExecutable) or when ctx
// was cancelled; the command's own failure is a non-zero Result.ExitCode.
func Run(ctx context.Context, p Policy, stdio Stdio) (*Result, error) {
	r, err := p.resolve()
	if err != nil {
		return nil, err
	}
	if stdio.Stdout == nil {
		stdio.Stdout = io.Discard
	}
	if stdio.Stderr == nil {
		stdio.Stderr = io.Discard
	}
	if p.NoSandbox {
		return runUnconfined(ctx, r, stdio)
	}
	return runConfined(ctx, r, stdio)
}

// runUnconfined runs the command with no confinement at all, still with the
// environment allowlist and the timeout, so that --no-sandbox differs from a
// confined run only in what the kernel enforces.
func runUnconfined(ctx context.Context, r *resolved, stdio Stdio) (*Result, error) {
	tmp, err := MkdirTemp("nosandbox")
	if err != nil {
		return nil, fmt.Errorf("%w: private temp dir: %v", ErrSetup, err)
	}
	defer RemoveAll(tmp)
	if r.Proxy != nil && !r.Proxy.Listening {
		// Unconfined there is no loopback of its own: the forwarder takes
		// the port on the host's, where every local process can use it
		// (--no-sandbox is for development only).
		ln, err := listenProxyLoopback(r.Proxy.Port)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSetup, err)
		}
		defer ln.Close()
		sock := r.Proxy.Socket
		go serveProxy(ln, func() (net.Conn, error) { return net.DialTimeout("unix", sock, proxyDialTimeout) })
	}
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, r.Command[0], r.Command[1:]...)
	cmd.Dir = r.Workdir
	cmd.Env = buildEnv(r.Env, r.SetEnv, tmp, tmp)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.Stdin, stdio.Stdout, stdio.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// Unconfined, a daemon the command leaves behind keeps our pipes open;
	// stop copying its output shortly after the command itself exits.
	cmd.WaitDelay = 500 * time.Millisecond
	err = cmd.Run()
	res := &Result{Mode: ModeNone}
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		res.TimedOut, res.ExitCode = true, ExitTimeout
		return res, nil
	case cmd.ProcessState != nil: // exited, possibly with ErrWaitDelay
		res.ExitCode = exitCodeOf(cmd.ProcessState.Sys().(syscall.WaitStatus))
		res.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		return res, nil
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("%w: %s", ErrCommandNotFound, r.Command[0])
	case err != nil:
		return nil, fmt.Errorf("%w: %s: %v", ErrCommandNotExecutable, r.Command[0], err)
	}
	return res, nil
}

// exitCodeOf maps a wait status to a shell-style exit code.
func exitCodeOf(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// RemoveAll removes a tree even when a command left unreadable or
// unwritable folders in it (overlayfs's work folders are mode 0 too).
func RemoveAll(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	_ = filepathWalkChmod(dir)
	_ = os.RemoveAll(dir)
}
