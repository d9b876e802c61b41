package workspace

import (
	"context"
	"io"
	"os"
	"os/exec"
)

// StartGit starts git exactly as the diff does (for the test that a kill
// -9 of forkbomb takes its helpers with it).
func StartGit(ctx context.Context, stdin io.Reader, extra []*os.File, args ...string) (*exec.Cmd, error) {
	c := gitCmd{}.cmd(ctx, args...)
	c.Stdin = stdin
	c.ExtraFiles = extra
	return c, c.Start()
}

// UseLock takes name's use lock as a running command does.
func (s *Store) UseLock(name string) (func(), error) { return s.useLock(name, false) }
