package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// protectGitDirs makes every git directory under the writable roots
// read-only: the workdir's .git, nested repositories' .git, a worktree's or
// submodule's gitdir, a bare repository or any folder git would take for a
// git directory (its remote's hooks run at the user's next push), the
// directory a "commondir" names, and what a symlink inside them (hooks,
// config) points to within the repository. Git metadata is where code that later runs on
// the host (hooks, core.fsmonitor, core.hooksPath) would be planted. It runs
// after the final pivot, so every path is resolved in the sandbox's own
// view and a symlink cannot reach anything the view hides. Anything it
// cannot make read-only — a .git that is itself a symlink in a writable
// tree, a link out of its repository into another writable place — fails
// the run rather than leave it writable.
//
// gitDirs are the git directories the parent found (FindGitDirs); each is
// checked again here, in the final view, before it is acted on.
func protectGitDirs(gitDirs, writable []string) error {
	var targets []string
	for _, g := range gitDirs {
		t, err := gitTargets(g, writable)
		if err != nil {
			return err
		}
		targets = append(targets, t...)
	}
	done := map[string]bool{}
	for _, t := range targets {
		if done[t] {
			continue
		}
		done[t] = true
		if len(done) > maxGitTargets {
			return fmt.Errorf("more than %d git metadata paths to protect; refusing to run in this tree", maxGitTargets)
		}
		// Not recursive: a bind of a folder holding earlier binds would
		// copy them all, and a crafted tree could exhaust the mount table.
		if err := unix.Mount(t, t, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("protect %s: %w", t, err)
		}
		if err := setattr(t, false, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, 0); err != nil {
			return fmt.Errorf("protect %s: %w", t, err)
		}
	}
	return nil
}
