//go:build linux || darwin

package sandbox

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// walkGitDirs is FindGitDirs for a kernel without getdents64 (macOS): the
// same judgement — every .git entry, every folder git would take for a
// git directory (isGitDir), nothing below one, root itself not judged,
// no symlink followed — one folder at a time, the kinds of entries read
// from the listing itself (an entry of unknown kind is lstat'ed). It
// fails closed as FindGitDirs does: a folder of the caller's it cannot
// list, or a path too long to judge, is an error, never a place left
// unchecked; the scan goes on and returns what it found with the first
// such error.
func walkGitDirs(root string) ([]string, error) {
	var found []string
	var failure error
	fail := func(err error) {
		if failure == nil {
			failure = err
		}
	}
	var scan func(dir string, isRoot bool)
	scan = func(dir string, isRoot bool) {
		if len(dir) >= unix.PathMax-16 {
			fail(fmt.Errorf("%s…: path too long to check for .git", dir[:64]))
			return
		}
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			var st unix.Stat_t
			switch {
			case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP):
				// gone or replaced since it was listed: nothing to protect
			case unix.Lstat(dir, &st) == nil && int(st.Uid) != os.Getuid():
				// another user's folder the command cannot chmod back either
			default:
				fail(fmt.Errorf("cannot check %s for .git: %w", dir, err))
			}
			return
		}
		f := os.NewFile(uintptr(fd), dir)
		entries, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			fail(fmt.Errorf("cannot check %s for .git: %w", dir, err))
			return
		}
		var marks gitMarks
		var subs []string
		for _, e := range entries {
			name := e.Name()
			marks.see(name)
			switch {
			case name == ".git":
				found = append(found, dir+"/.git")
			case e.IsDir():
				subs = append(subs, dir+"/"+name)
			}
		}
		if !isRoot && marks.maybe() && isGitDir(dir) {
			found = append(found, dir)
			return
		}
		for _, s := range subs {
			scan(s, false)
		}
	}
	scan(root, true)
	return found, failure
}
