package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// protectGitDirs makes every git directory under the writable roots
// read-only: the workdir's .git, nested repositories' .git, a worktree's or
// submodule's gitdir, and what a symlink inside .git (hooks, config) points
// to when that lies in a writable tree. Git metadata is where code that
// later runs on the host (hooks, core.fsmonitor, core.hooksPath) would be
// planted. It runs after the final pivot, so every path is resolved in the
// sandbox's own view and a symlink cannot reach anything the view hides.
//
// gitDirs are the .git entries the parent found (findGitDirs); each is
// checked again here, in the final view, before it is acted on.
func protectGitDirs(gitDirs, writable []string) error {
	var targets []string
	for _, g := range gitDirs {
		targets = append(targets, gitTargets(g, writable)...)
	}
	done := map[string]bool{}
	for _, t := range targets {
		if done[t] {
			continue
		}
		done[t] = true
		if err := unix.Mount(t, t, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("protect %s: %w", t, err)
		}
		if err := setattr(t, true, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, 0); err != nil {
			return fmt.Errorf("protect %s: %w", t, err)
		}
	}
	return nil
}

// gitTargets lists the paths to make read-only for one .git entry.
func gitTargets(gitPath string, writable []string) []string {
	inWritable := func(p string) bool {
		for _, w := range writable {
			if within(p, w) {
				return true
			}
		}
		return false
	}
	resolved, err := filepath.EvalSymlinks(gitPath)
	if err != nil || !inWritable(resolved) {
		return nil // dangling, or already read-only where it points
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return nil
	}
	out := []string{resolved}
	if !fi.IsDir() {
		// A worktree or submodule: ".git" is a file naming the real gitdir.
		data, err := os.ReadFile(resolved)
		if err == nil && bytes.HasPrefix(data, []byte("gitdir:")) {
			gd := strings.TrimSpace(string(data[len("gitdir:"):]))
			if !filepath.IsAbs(gd) {
				gd = filepath.Join(filepath.Dir(resolved), gd)
			}
			if r, err := filepath.EvalSymlinks(gd); err == nil && inWritable(r) {
				out = append(out, r)
			}
		}
		return out
	}
	// Symlinks inside .git (a hooks folder kept elsewhere in the repo, a
	// shared config): protect what they point to as well.
	entries, _ := os.ReadDir(resolved)
	for _, e := range entries {
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		if r, err := filepath.EvalSymlinks(resolved + "/" + e.Name()); err == nil && inWritable(r) {
			out = append(out, r)
		}
	}
	return out
}
