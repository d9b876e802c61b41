package world

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"

	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// Test binaries — and their workers, the same binary re-executed — get two commands a real
// world never has: one that panics and one that spins without ever looking at its context
// (what a command that cannot be interrupted looks like to the deadline). And they get the bare
// interpreter: mvdan.cc/sh with its default handlers, over the host.
// The worker (worker.go's init, which never returns) runs them through workerHooks, set by a
// variable's initialisation, which comes before any init function.
var spun atomic.Int64

var _ = func() bool { workerHooks = append(workerHooks, registerTestHooks); return true }()

func init() { registerTestHooks() }

func registerTestHooks() {
	commands["forkbomb-test-panic"] = func(c *cmd, args []string) int { panic("forkbomb-test-panic " + strings.Join(args, " ")) }
	commands["forkbomb-test-spin"] = func(c *cmd, args []string) int {
		markSpinning()
		for {
			spun.Add(1)
		}
	}
	// A command that forgets the world and goes to the host, as a missed hook would.
	commands["forkbomb-test-host"] = func(c *cmd, args []string) int {
		var err error
		switch args[0] {
		case "read":
			var b []byte
			b, err = os.ReadFile(args[1])
			c.out.Write(b)
		case "stat":
			_, err = os.Lstat(args[1])
		case "write":
			err = os.WriteFile(args[1], []byte("x"), 0o644)
		case "dial":
			var conn net.Conn
			if conn, err = net.Dial("tcp", args[1]); err == nil {
				conn.Close()
			}
		case "exec":
			err = exec.Command(args[1]).Run()
		case "signal":
			err = syscall.Kill(0, 0) // forkbomb's process group
		}
		if err != nil {
			return c.fail("%v", err)
		}
		fmt.Fprintln(c.out, "reached")
		return 0
	}
	bareInterpreter = runBare
}

// runBare runs script in mvdan.cc/sh with none of the world's hooks.
func runBare(ctx context.Context, script string, stdin io.Reader, stdout, stderr io.Writer) int {
	f, err := syntax.NewParser().Parse(strings.NewReader(script), "")
	if err != nil {
		io.WriteString(stderr, err.Error()+"\n")
		return 2
	}
	// Not interp.Dir: it would stat "/", which a confined worker cannot.
	r, err := interp.New(interp.StdIO(stdin, stdout, stderr), func(r *interp.Runner) error { r.Dir = "/"; return nil })
	if err != nil {
		io.WriteString(stderr, err.Error()+"\n")
		return 1
	}
	err = r.Run(ctx, f)
	var st interp.ExitStatus
	switch {
	case err == nil:
		return 0
	case errors.As(err, &st):
		return int(st)
	}
	io.WriteString(stderr, err.Error()+"\n")
	return 1
}

// bareRunner is a Runner whose worker runs the bare interpreter.
func bareRunner() *Runner { return &Runner{bare: true} }
