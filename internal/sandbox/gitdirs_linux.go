package sandbox

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// maxGitTargets bounds the read-only binds made for git metadata: a tree
// built to need more (to exhaust the mount table) is refused.
const maxGitTargets = 512

// protectGitDirs makes every git directory under the writable roots
// read-only: the workdir's .git, nested repositories' .git, a worktree's or
// submodule's gitdir, and what a symlink inside them (hooks, config) points
// to within the repository. Git metadata is where code that later runs on
// the host (hooks, core.fsmonitor, core.hooksPath) would be planted. It runs
// after the final pivot, so every path is resolved in the sandbox's own
// view and a symlink cannot reach anything the view hides. Anything it
// cannot make read-only — a .git that is itself a symlink in a writable
// tree, a link out of its repository into another writable place — fails
// the run rather than leave it writable.
//
// gitDirs are the .git entries the parent found (FindGitDirs); each is
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

// gitTargets lists the paths to make read-only for one .git entry.
func gitTargets(gitPath string, writable []string) ([]string, error) {
	inWritable := func(p string) bool {
		for _, w := range writable {
			if within(p, w) {
				return true
			}
		}
		return false
	}
	fi, err := os.Lstat(gitPath)
	if err != nil {
		return nil, nil // gone since the scan: nothing to protect
	}
	repo := filepath.Dir(gitPath)
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		// The link itself could be re-pointed at metadata the command
		// wrote; a bind cannot cover a symlink.
		return nil, fmt.Errorf("%s is a symlink in a writable tree; forkbomb cannot keep it read-only (make it a real .git, or run elsewhere)", gitPath)
	case fi.IsDir():
		out := []string{gitPath}
		links, err := linksIn(gitPath, repo, inWritable)
		return append(out, links...), err
	case fi.Mode().IsRegular():
		// A worktree or submodule: ".git" is a file naming the real gitdir.
		out := []string{gitPath}
		gd, err := readGitdirFile(gitPath)
		if err != nil || gd == "" {
			return out, nil
		}
		if !filepath.IsAbs(gd) {
			gd = filepath.Join(repo, gd)
		}
		r, err := filepath.EvalSymlinks(gd)
		if err != nil || !inWritable(r) {
			return out, nil // missing, or read-only where it is
		}
		out = append(out, r)
		links, err := linksIn(r, repo, inWritable)
		return append(out, links...), err
	}
	return nil, nil // a fifo or socket named .git is not git metadata
}

// linksIn returns what the symlinks directly inside a git directory point
// to, where that lies in a writable tree: within the repository it is made
// read-only too; anywhere else it is refused.
func linksIn(gitDir, repo string, inWritable func(string) bool) ([]string, error) {
	entries, _ := os.ReadDir(gitDir)
	var out []string
	for _, e := range entries {
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		r, err := filepath.EvalSymlinks(filepath.Join(gitDir, e.Name()))
		if err != nil || !inWritable(r) {
			continue // dangling, or read-only where it points
		}
		if !within(r, repo) {
			return nil, fmt.Errorf("%s/%s points to %s, a writable place outside its repository; refusing to run", gitDir, e.Name(), r)
		}
		out = append(out, r)
	}
	return out, nil
}

// readGitdirFile reads the "gitdir: PATH" line of a .git file, refusing
// anything but a small regular file.
func readGitdirFile(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil || !bytes.HasPrefix(data, []byte("gitdir:")) {
		return "", err
	}
	line, _, _ := strings.Cut(string(data[len("gitdir:"):]), "\n")
	return strings.TrimSpace(line), nil
}
