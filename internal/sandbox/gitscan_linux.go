package sandbox

import (
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// findGitDirs returns every entry named .git below root (directories and
// gitdir files), without following symlinks and without descending into
// git directories. It is the one cost of a sandbox start that grows with
// the tree, so it reads directories with getdents64 directly (no stat, no
// sorting) on every core, and runs in the parent while the init starts.
func findGitDirs(root string) []string {
	var (
		mu      sync.Mutex
		found   []string
		pending sync.WaitGroup
		work    = make(chan string, 1024)
	)
	var enqueue func(dir string)
	enqueue = func(dir string) {
		pending.Add(1)
		select {
		case work <- dir:
		default:
			// queue full: scan inline rather than block every worker
			scanDir(dir, enqueue, func(p string) { mu.Lock(); found = append(found, p); mu.Unlock() })
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
				scanDirBuf(dir, buf, enqueue, func(p string) { mu.Lock(); found = append(found, p); mu.Unlock() })
				pending.Done()
			}
		}()
	}
	enqueue(root)
	pending.Wait()
	close(work)
	wg.Wait()
	return found
}

func scanDir(dir string, sub func(string), git func(string)) {
	scanDirBuf(dir, make([]byte, 32<<10), sub, git)
}

// scanDirBuf lists one directory: subdirectories go to sub, .git entries
// to git. Unreadable directories are skipped: the command cannot write
// what forkbomb's user cannot read either.
func scanDirBuf(dir string, buf []byte, sub func(string), git func(string)) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
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
			switch {
			case string(name) == "." || string(name) == "..":
			case string(name) == ".git":
				git(dir + "/.git")
			case typ == unix.DT_DIR:
				sub(dir + "/" + string(name))
			case typ == unix.DT_UNKNOWN:
				var st unix.Stat_t
				if unix.Lstat(dir+"/"+string(name), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
					sub(dir + "/" + string(name))
				}
			}
		}
	}
}
