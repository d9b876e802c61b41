// Command goexec runs one command through Go's os/exec and exits with its
// status: the least a Go program that hands a sandbox's set-up to a
// separate C stage would cost (runc's route: a Go parent, a small
// pre-runtime stage). bench/sandbox-start.sh times `goexec bwrap ...` beside
// bwrap and forkbomb: its time over bwrap's is what the Go parent alone
// adds, however small the stage after it.
//
// Usage:
//
//	goexec CMD [ARG...]
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: goexec CMD [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() > 0 {
			os.Exit(exit.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "goexec:", err)
		os.Exit(1)
	}
}
