// Package cli holds forkbomb's commands, one file per verb, and decides the
// process's exit status in one place (exit.go).
//
// The verbs whose dependencies are heavy (gateway, world mcp/race/drive)
// and the implementations of heavy backends are not in this package:
// internal/cli/full adds them through Options, and only the forkbomb-full
// binary links it. The core forkbomb
// binary hands such a command line to forkbomb-full beside it (sibling.go).
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/forkbomb/forkbomb/internal/backend"
	"github.com/forkbomb/forkbomb/internal/podrun"
	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/tunnel"
)

// IO are the streams a command reads and writes; tests pass buffers.
type IO struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// printJSON writes v to w as indented JSON: every verb's --json.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Options are what a binary links beyond the core verbs. The zero value is
// the core forkbomb: a command needing more is handed to forkbomb-full.
type Options struct {
	// Verbs make the top-level commands the core does not link
	// (gateway); each replaces the core's hand-off of the same name.
	Verbs []Verb
	// WorldVerbs make the world's commands the core does not link (mcp,
	// race, drive: the MCP SDK and the engines' world drivers), the same
	// way.
	WorldVerbs []Verb
	// Backends are the implementations of the backends the core does
	// not link (run --backend, sandbox --probe --backend).
	Backends backend.Linked
}

// Main runs forkbomb with os.Args and returns the exit status.
func Main(o Options) int {
	if sandbox.IsInit() {
		sandbox.InitMain() // never returns
	}
	if tunnel.IsForwarder() { // in a remote backend's fork: its end of internal/tunnel
		tunnel.ForwarderMain() // never returns
	}
	if podrun.IsRunner() { // in a remote backend's fork: each command inside forkbomb's sandbox
		podrun.Main() // never returns
	}
	if podrun.IsServer() { // in a remote backend's fork: the session carrying its commands
		podrun.ServeMain() // never returns
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	return runLine(ctx, os.Args[1:], IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, build{Options: o, handoff: execFull})
}

// Run executes one command line and returns its exit status. A command
// that o does not link fails with a message naming forkbomb-full: only Main
// replaces the process.
func Run(ctx context.Context, args []string, stdio IO, o Options) int {
	return runLine(ctx, args, stdio, build{Options: o, handoff: refuseHandoff})
}

func runLine(ctx context.Context, args []string, stdio IO, b build) int {
	root := newRootCmd(stdio, b, args)
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
