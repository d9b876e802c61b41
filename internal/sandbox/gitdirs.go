//go:build linux || darwin

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

// What git metadata in a writable tree must stay read-only (gitTargets),
// found before the command starts: by the parent as the scan reads it
// (FindGitDirs), then on Linux again in the sandbox's final view before
// each bind (gitdirs_linux.go), on macOS once, as the profile's rules
// (seatbelt.go).

// maxGitTargets bounds the git metadata kept read-only: a tree built to
// need more (to exhaust the mount table, or to make a profile too large
// to load) is refused.
const maxGitTargets = 512

// gitTargets lists the paths to make read-only for one git directory (a
// .git entry or a folder FindGitDirs judged one).
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
		return gitDirTargets(gitPath, repo, inWritable)
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
		t, err := gitDirTargets(r, repo, inWritable)
		return append(out, t...), err
	}
	return nil, nil // a fifo or socket named .git is not git metadata
}

// gitDirTargets lists a git directory, what its symlinks lead to (linksIn)
// and its common directory: a worktree's gitdir, or one made to look like
// it, keeps config, hooks, objects and refs in the directory its
// "commondir" file names, and git runs that one's hooks.
func gitDirTargets(dir, repo string, inWritable func(string) bool) ([]string, error) {
	out := []string{dir}
	links, err := linksIn(dir, repo, inWritable)
	if err != nil {
		return nil, err
	}
	out = append(out, links...)
	c, ok := commonDir(dir)
	if !ok {
		return out, nil
	}
	r, err := filepath.EvalSymlinks(c)
	if err != nil || !inWritable(r) {
		return out, nil // missing, or read-only where it is
	}
	// r may hold dir (a linked worktree's "../.."): binds of both, in
	// either order, leave dir read-only.
	links, err = linksIn(r, repo, inWritable)
	return append(append(out, r), links...), err
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
	data, err := readSmall(path, false)
	if err != nil || !bytes.HasPrefix(data, []byte("gitdir:")) {
		return "", err
	}
	line, _, _ := strings.Cut(string(data[len("gitdir:"):]), "\n")
	return strings.TrimSpace(line), nil
}

// commonDir returns the directory a git directory's "commondir" file
// names, made absolute against dir as git does; ok is false without one.
func commonDir(dir string) (string, bool) {
	// Followed through a symlink, as git does: a link must not hide it.
	data, err := readSmall(dir+"/commondir", true)
	if err != nil {
		return "", false
	}
	c := strings.TrimRight(string(data), "\r\n")
	if c == "" {
		return "", false
	}
	if !filepath.IsAbs(c) {
		c = filepath.Join(dir, c)
	}
	return c, true
}

// readSmall reads the first 4 KiB of a regular file, without blocking on
// a FIFO, and without following a final symlink unless told to.
func readSmall(path string, follow bool) ([]byte, error) {
	flags := os.O_RDONLY | unix.O_NONBLOCK
	if !follow {
		flags |= unix.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	return io.ReadAll(io.LimitReader(f, 4096))
}

// gitMarks are the names git looks for in a git directory, seen in a folder's listing: a
// folder with them is worth asking isGitDir about (the git scans, on every platform).
type gitMarks struct{ head, objects, refs, commondir bool }

func (m *gitMarks) see(name string) {
	switch name {
	case "HEAD":
		m.head = true
	case "objects":
		m.objects = true
	case "refs":
		m.refs = true
	case "commondir":
		m.commondir = true
	}
}

func (m gitMarks) maybe() bool { return m.head && (m.objects && m.refs || m.commondir) }

// isGitDir reports whether git would take dir for a git directory: git's
// own test (setup.c, is_git_directory) is a HEAD, then objects/ and refs/
// in the common directory — dir itself, or the one its "commondir" file
// names. objects and refs are followed through symlinks, as git's
// access() does. HEAD's content is not judged, where git wants a valid
// ref: the command could repair a HEAD during the run, and a folder with
// all three names that git would refuse is rare enough to be read-only.
func isGitDir(dir string) bool {
	var st unix.Stat_t
	if unix.Lstat(dir+"/HEAD", &st) != nil {
		return false
	}
	if m := st.Mode & unix.S_IFMT; m != unix.S_IFREG && m != unix.S_IFLNK {
		return false
	}
	common := dir
	if c, ok := commonDir(dir); ok {
		common = c
	}
	return unix.Stat(common+"/objects", &st) == nil && unix.Stat(common+"/refs", &st) == nil
}
