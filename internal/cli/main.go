// Package cli holds forkbomb's commands, one file per verb, and decides the
// process's exit status in one place (exit.go).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/tunnel"
)

// IO are the streams a command reads and writes; tests pass buffers.
type IO struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// Main runs forkbomb with os.Args and returns the exit status.
func Main() int {
	if sandbox.IsInit() {
		sandbox.InitMain() // never returns
	}
	if tunnel.IsForwarder() { // in a Kubernetes pod: internal/kube's tunnel
		tunnel.ForwarderMain() // never returns
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	return Run(ctx, os.Args[1:], IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
}

// Run executes one command line and returns its exit status.
func Run(ctx context.Context, args []string, stdio IO) int {
	root := newRootCmd(stdio)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return exitCode(ctx, usageOrNot(err), stdio.Err)
}

// usageOrNot marks cobra's own argument errors (an unknown subcommand, a
// wrong number of arguments) as usage errors; flag errors are marked by
// the commands' flag-error functions already.
func usageOrNot(err error) error {
	if err == nil || errors.Is(err, errUsage) {
		return err
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "invalid argument"} {
		if strings.HasPrefix(err.Error(), p) {
			return fmt.Errorf("%w: %v (see 'forkbomb --help')", errUsage, err)
		}
	}
	return err
}
