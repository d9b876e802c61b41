// Command goexec starts one command and waits for it, and does nothing
// else: the least a Go program that hands a sandbox's set-up to a separate C
// stage would cost (runc's route: a Go parent, a small pre-runtime stage).
// It starts the command with syscall.ForkExec and Wait4, the cheapest way a
// Go program has (os/exec, which forkbomb uses, cost 0.3–2 ms more CPU here:
// bench/README.md, "Stop 56"). bench/sandbox-start.sh times `goexec bwrap
// ...` beside bwrap and forkbomb: its time over bwrap's is what the Go
// parent alone adds.
//
// Usage:
//
//	goexec CMD [ARG...]
//
// CMD is looked up in PATH as a shell would. goexec exits with the command's status,
// 128+N when signal N ended it, and 127 when it could not be started.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: goexec CMD [ARG...]")
		os.Exit(2)
	}
	path, err := exec.LookPath(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "goexec:", err)
		os.Exit(127)
	}
	pid, err := syscall.ForkExec(path, os.Args[1:], &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "goexec:", err)
		os.Exit(127)
	}
	var ws syscall.WaitStatus
	for {
		_, err = syscall.Wait4(pid, &ws, 0, nil)
		if err != syscall.EINTR {
			break
		}
	}
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "goexec:", err)
		os.Exit(1)
	case ws.Signaled():
		os.Exit(128 + int(ws.Signal()))
	}
	os.Exit(ws.ExitStatus())
}
