package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// FindGitDirs returns every git directory below root: each entry named
// .git (directories and gitdir files), and each directory git itself
// would take for a repository whatever its name — a bare one (origin.git,
// the remote of a clone beside it, whose hooks run at the user's next
// push), a $GIT_DIR layout, a worktree's gitdir (isGitDir). It does not
// follow symlinks nor descend into git directories; root itself is not
// judged (the caller named it writable). It is the one cost of a sandbox
// start that grows with the tree, so it reads directories with getdents64
// directly (no stat, no sorting) on every core, and runs in the parent
// while the init starts.
//
// It fails closed: a directory it cannot list, if the command could make
// it listable again (it belongs to the caller), or a path too long to
// mount, is an error rather than a place left unchecked.
func FindGitDirs(root string) ([]string, error) {
	var (
		mu      sync.Mutex
		found   []string
		failure error
		pending sync.WaitGroup
		work    = make(chan string, 1024)
	)
	fail := func(err error) {
		mu.Lock()
		if failure == nil {
			failure = err
		}
		mu.Unlock()
	}
	var enqueue func(dir string)
	enqueue = func(dir string) {
		pending.Add(1)
		select {
		case work <- dir:
		default:
			// queue full: scan inline rather than block every worker
			scanDir(dir, dir == root, enqueue, func(p string) { mu.Lock(); found = append(found, p); mu.Unlock() }, fail)
			pending.Done()
		}
	}
	workers := max(1, min(runtime.NumCPU(), 4))
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 32<<10)
			for dir := range work {
				scanDirBuf(dir, buf, dir == root, enqueue, func(p string) { mu.Lock(); found = append(found, p); mu.Unlock() }, fail)
				pending.Done()
			}
		}()
	}
	enqueue(root)
	pending.Wait()
	close(work)
	wg.Wait()
	return found, failure
}

func scanDir(dir string, isRoot bool, sub func(string), git func(string), fail func(error)) {
	scanDirBuf(dir, make([]byte, 32<<10), isRoot, sub, git, fail)
}

// scanDirBuf lists one directory: subdirectories go to sub, .git entries
// to git, problems to fail. A directory that is itself a git directory
// goes to git instead, and its subdirectories are not listed — unless it
// is the root, which the caller named writable.
func scanDirBuf(dir string, buf []byte, isRoot bool, sub func(string), git func(string), fail func(error)) {
	if len(dir) >= unix.PathMax-16 {
		fail(fmt.Errorf("%s…: path too long to check for .git", dir[:64]))
		return
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		var st unix.Stat_t
		switch {
		case err == unix.ENOENT || err == unix.ENOTDIR || err == unix.ELOOP:
			// gone or replaced since it was listed: nothing to protect
		case unix.Lstat(dir, &st) == nil && int(st.Uid) != os.Getuid():
			// another user's folder the command cannot chmod back either
		default:
			fail(fmt.Errorf("cannot check %s for .git: %w", dir, err))
		}
		return
	}
	defer unix.Close(fd)
	// The names git looks for in a git directory (isGitDir); the
	// subdirectories wait until the listing shows it is not one.
	var marks gitMarks
	var subs []string
	defer func() {
		if !isRoot && marks.maybe() && isGitDir(dir) {
			git(dir)
			return
		}
		for _, d := range subs {
			sub(d)
		}
	}()
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil || n <= 0 {
			return
		}
		for off := 0; off < n; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name
			reclen := int(*(*uint16)(unsafe.Pointer(&buf[off+16])))
			typ := buf[off+18]
			name := buf[off+19 : off+reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			off += reclen
			marks.see(string(name))
			switch {
			case string(name) == "." || string(name) == "..":
			case string(name) == ".git":
				git(dir + "/.git")
			case typ == unix.DT_DIR:
				subs = append(subs, dir+"/"+string(name))
			case typ == unix.DT_UNKNOWN:
				var st unix.Stat_t
				if unix.Lstat(dir+"/"+string(name), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
					subs = append(subs, dir+"/"+string(name))
				}
			}
		}
	}
}
