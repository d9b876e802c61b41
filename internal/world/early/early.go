// Package early is the part of the world's verbs that runs before forkbomb's start: on
// linux/amd64 it imports nothing (its system calls are its own, raw_linux_amd64.s), so Go
// initialises it among the first packages of all — before syscall, os and the hundred-odd
// packages forkbomb links (the spec initialises packages in import-path order among those whose
// imports are done, and one with none is done at once); elsewhere it imports syscall alone and
// runs right after it (sys_other.go). A `forkbomb world fork SRC DST` needs none of the rest:
// its work is one link under the source's lock, done here, and the process ends before the rest
// of the start; forkbomb's start otherwise costs that verb three times a cp of the world's file.
// Anything this path does not handle itself — flags, help, a lock held by someone else, a
// destination that exists, another filesystem — goes on to the verb proper (internal/cli),
// which does it all again with its errors and messages, so the two never disagree.
package early

// LockSuffix makes a world's lock file's name from the world's (world.Lock).
const LockSuffix = ".lock"

// OpenLock opens (making it if needed, mode 0600) the lock file of the world at p: never
// through a symbolic link, never inherited by a child. errno is the call's error number, 0 when
// it succeeded (a syscall.Errno to its caller).
func OpenLock(p string) (fd int, errno uintptr) { return openLock(p + LockSuffix) }

// ForkMessage is what `world fork` prints on success.
func ForkMessage(src, dst string) string { return dst + ": fork of " + src + "\n" }

func init() {
	args, ok := cmdline()
	if !ok || len(args) != 5 || args[1] != "world" || args[2] != "fork" || !operand(args[3]) || !operand(args[4]) {
		return
	}
	if fork(args[3], args[4]) {
		write1(ForkMessage(args[3], args[4]))
		exit0()
	}
}

// operand is a word cobra would take as an argument, not a flag.
func operand(s string) bool { return s != "" && s[0] != '-' }

// fork links dst to src under src's lock, as world.Fork does when it can; false, having
// changed nothing, when it cannot here: the lock is held (the verb proper waits for it, and
// answers a signal while it waits), src is not a regular file, or the link fails.
func fork(src, dst string) bool {
	fd, errno := OpenLock(src)
	if errno != 0 {
		return false
	}
	defer closeFD(fd)
	return tryLock(fd) && isRegular(src) && link(src, dst)
}

// cmdline is the process's argv, from the kernel (os.Args is set later, in os's init); not ok
// when it cannot be read whole.
func cmdline() ([]string, bool) {
	fd, ok := openRead("/proc/self/cmdline")
	if !ok {
		return nil, false
	}
	defer closeFD(fd)
	var buf [8192]byte
	n := 0
	for n < len(buf) {
		m, again, ok := read(fd, buf[n:])
		if again {
			continue
		}
		if !ok {
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
