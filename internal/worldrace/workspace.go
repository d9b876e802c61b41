package worldrace

import (
	"context"
	"fmt"
	"io/fs"
	"sync"

	"github.com/forkbomb/forkbomb/internal/sandbox"
	"github.com/forkbomb/forkbomb/internal/workspace"
	"github.com/forkbomb/forkbomb/internal/world"
)

// Workspace is a branch world as an engine sees it: Exec runs the shell command in the world,
// in a worker of its own the kernel confines (world.Runner, started on the first command and
// kept for the branch's life), and the editor gets no files — the world's shell is the tool
// that acts.
type Workspace struct {
	File   string
	Limits world.Limits

	mu     sync.Mutex
	runner *world.Runner
}

// Close ends the branch's worker.
func (w *Workspace) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.runner != nil {
		w.runner.Close()
		w.runner = nil
	}
}

// Exec implements engine.Workspace: the policy's command is ["/bin/sh", "-c", SCRIPT]. A
// panic or a worker that died is the command's failure (status 125, its message on stderr),
// and the agent goes on.
func (w *Workspace) Exec(ctx context.Context, p sandbox.Policy, stdio sandbox.Stdio) (*sandbox.Result, error) {
	if len(p.Command) != 3 || p.Command[1] != "-c" {
		return nil, fmt.Errorf("world: only shell scripts run in a world")
	}
	w.mu.Lock()
	if w.runner == nil {
		w.runner = world.NewRunner()
	}
	r := w.runner
	w.mu.Unlock()
	res, err := r.ExecFile(ctx, w.File, p.Command[2], nil, w.Limits)
	if err != nil {
		return nil, err
	}
	if stdio.Stdout != nil {
		stdio.Stdout.Write(res.Stdout)
	}
	if stdio.Stderr != nil {
		stdio.Stderr.Write(res.Stderr)
	}
	return &sandbox.Result{ExitCode: res.Status}, nil
}

// Files implements engine.Workspace.
func (w *Workspace) Files(context.Context) (string, workspace.Files, error) {
	return "/work", noFiles{}, nil
}

// errShellOnly is what the editor tool tells the model in a world.
var errShellOnly = fmt.Errorf("%w: in a world the shell is the only tool; use it to read and write files", fs.ErrPermission)

type noFiles struct{}

func (noFiles) Stat(context.Context, string) (fs.FileMode, error) { return 0, errShellOnly }
func (noFiles) Read(context.Context, string, int64) ([]byte, fs.FileMode, error) {
	return nil, 0, errShellOnly
}
func (noFiles) List(context.Context, string, int) ([]string, error)      { return nil, errShellOnly }
func (noFiles) Write(context.Context, string, []byte, fs.FileMode) error { return errShellOnly }
