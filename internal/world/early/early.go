// Package early is the part of the world's verbs that runs before forkbomb's start: this
// package imports only syscall, so Go initialises it right after syscall, before os and the
// hundred-odd packages forkbomb links (the spec initialises packages in import-path order among
// those whose imports are done). A `forkbomb world fork SRC DST` needs none of them: its work
// is one link under the source's lock, done here, and the process ends before the rest of the
// start; forkbomb's start otherwise costs that verb three times a cp of the world's file.
// Anything this path does not handle itself — flags, help, a lock held by someone else, a
// destination that exists, another filesystem — goes on to the verb proper (internal/cli),
// which does it all again with its errors and messages, so the two never disagree.
package early

import "syscall"

// LockSuffix makes a world's lock file's name from the world's (world.Lock).
const LockSuffix = ".lock"

// OpenLock opens (making it if needed) the lock file of the world at p: never through a
// symbolic link, never inherited by a child.
func OpenLock(p string) (int, error) {
	return syscall.Open(p+LockSuffix, syscall.O_RDWR|syscall.O_CREAT|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
}

// ForkMessage is what `world fork` prints on success.
func ForkMessage(src, dst string) string { return dst + ": fork of " + src + "\n" }

func init() {
	args, ok := cmdline()
	if !ok || len(args) != 5 || args[1] != "world" || args[2] != "fork" || !operand(args[3]) || !operand(args[4]) {
		return
	}
	if fork(args[3], args[4]) {
		msg := ForkMessage(args[3], args[4])
		syscall.Write(1, []byte(msg))
		syscall.Exit(0)
	}
}

// operand is a word cobra would take as an argument, not a flag.
func operand(s string) bool { return s != "" && s[0] != '-' }

// fork links dst to src under src's lock, as world.Fork does when it can; false, having
// changed nothing, when it cannot here: the lock is held (the verb proper waits for it, and
// answers a signal while it waits), src is not a regular file, or the link fails.
func fork(src, dst string) bool {
	fd, err := OpenLock(src)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	if syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return false
	}
	var st syscall.Stat_t
	if syscall.Lstat(src, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return false
	}
	return syscall.Link(src, dst) == nil
}

// cmdline is the process's argv, from the kernel (os.Args is set later, in os's init); not ok
// when it cannot be read whole.
func cmdline() ([]string, bool) {
	fd, err := syscall.Open("/proc/self/cmdline", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer syscall.Close(fd)
	var buf [8192]byte
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, false
		}
		if m == 0 {
			break
		}
		n += m
	}
	if n == len(buf) || n == 0 || buf[n-1] != 0 {
		return nil, false // longer than any command line this path takes, or cut
	}
	var args []string
	start := 0
	for i := 0; i < n; i++ {
		if buf[i] == 0 {
			args = append(args, string(buf[start:i]))
			start = i + 1
		}
	}
	return args, true
}
