package workspace

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
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

// StoreLocked says whether another holds the store lock now (taken without waiting, and let go).
func (s *Store) StoreLocked() bool {
	release, err := flock(filepath.Join(s.Root, ".lock"), syscall.LOCK_EX|syscall.LOCK_NB)
	if err != nil {
		return true
	}
	release()
	return false
}
