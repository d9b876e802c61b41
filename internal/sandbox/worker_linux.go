package sandbox

import (
	"fmt"
	"os"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// A worker is a helper process that serves requests over the pipes it inherited and needs
// nothing of the host: no file, no program, no network, no other process. The world's shell
// interpreter (internal/world) runs in one, so a hook of the interpreter that forkbomb's code
// misses fails closed in the kernel instead of answering from the host (issue 21: `pwd -P`,
// `command -v`, `source` through $PATH and `~user` all reached the host through the
// interpreter's own os.Stat, os.Readlink and os/user calls).
//
// Unlike the sandbox's init, a worker confines its whole process, every thread, for the rest
// of its life: it execs nothing afterwards, so nothing needs the restrictions to start later.

// WorkerLimits are the worker's rlimits.
type WorkerLimits struct {
	// Data bounds the heap (RLIMIT_DATA); 0 leaves it as it is.
	Data int64
}

// WorkerConfinement says which layers engaged.
type WorkerConfinement struct {
	LandlockABI int // 0: the kernel has no Landlock; the seccomp filter still denies the calls
}

// workerFiles is RLIMIT_NOFILE: the inherited pipes, the runtime's poller and the pipes an
// interpreter makes (two per pipeline stage); nothing else can be opened.
const workerFiles = 1024

// ConfineWorker confines the calling process for good. Order: rlimits and no_new_privs
// first (they need no privilege), Landlock next (its calls must not be filtered), seccomp last,
// synchronised to every thread (TSYNC), so a thread the Go runtime made before the call is as
// confined as the one that made it, and any thread made after inherits it all.
func ConfineWorker(l WorkerLimits) (WorkerConfinement, error) {
	var c WorkerConfinement
	set := func(res int, v uint64) error { return unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: v}) }
	for _, r := range []struct {
		name string
		res  int
		v    uint64
	}{
		{"RLIMIT_CORE", unix.RLIMIT_CORE, 0},
		{"RLIMIT_FSIZE", unix.RLIMIT_FSIZE, 0},
		{"RLIMIT_NOFILE", unix.RLIMIT_NOFILE, workerFiles},
		{"RLIMIT_MEMLOCK", unix.RLIMIT_MEMLOCK, 0},
		{"RLIMIT_MSGQUEUE", unix.RLIMIT_MSGQUEUE, 0},
	} {
		if err := set(r.res, r.v); err != nil {
			return c, fmt.Errorf("confine worker: %s: %w", r.name, err)
		}
	}
	// The race detector maps its shadow memory as the heap grows, and that counts as data.
	if l.Data > 0 && !raceBuild {
		if err := set(unix.RLIMIT_DATA, uint64(l.Data)); err != nil {
			return c, fmt.Errorf("confine worker: RLIMIT_DATA: %w", err)
		}
	}
	if err := ll.AllThreadsPrctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return c, fmt.Errorf("confine worker: no_new_privs: %w", err)
	}
	c.LandlockABI = landlockABI()
	if c.LandlockABI > 0 {
		// Every filesystem right handled and none granted: no host file can be opened, read,
		// written, listed, made or executed. TCP (and UDP where the kernel handles it) can be
		// neither bound nor connected; signals and abstract sockets stay inside the domain.
		conf := landlock.Config{
			HandledAccessFS:  allAccessFS,
			HandledAccessNet: landlock.AccessNetSet(ll.AccessNetBindTCP | ll.AccessNetConnectTCP | ll.AccessNetBindUDP | ll.AccessNetConnectSendUDP),
			Scoped:           landlock.ScopedSet(ll.ScopeAbstractUnixSocket | ll.ScopeSignal),
		}.BestEffort()
		if err := conf.Restrict(); err != nil {
			return c, fmt.Errorf("confine worker: landlock: %w", err)
		}
	}
	prog, err := workerFilter(uint32(os.Getpid()))
	if err != nil {
		return c, fmt.Errorf("confine worker: %w", err)
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return c, fmt.Errorf("confine worker: assemble filter: %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, in := range raw {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if r, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&fprog))); errno != 0 || r != 0 {
		return c, fmt.Errorf("confine worker: load filter (thread %d): %w", r, errno)
	}
	return c, nil
}

// workerDenied fail with EPERM in a worker, on top of the sandbox's list: every call that
// names a host path (Landlock does not cover stat, access, readlink or chdir: those would
// still tell whether a host file exists), every way to run a program, every socket, host
// IPC objects (System V and POSIX queues outlive the process and are shared with the host),
// the cwd and the host's name, and raising a limit.
var workerDenied = append([]uint32{
	unix.SYS_EXECVE, unix.SYS_EXECVEAT,
	unix.SYS_OPENAT, unix.SYS_OPENAT2, unix.SYS_FACCESSAT, unix.SYS_FACCESSAT2, unix.SYS_READLINKAT,
	unix.SYS_CHDIR, unix.SYS_FCHDIR, unix.SYS_GETCWD, unix.SYS_MKDIRAT, unix.SYS_MKNODAT, unix.SYS_UNLINKAT,
	unix.SYS_RENAMEAT, unix.SYS_RENAMEAT2, unix.SYS_LINKAT, unix.SYS_SYMLINKAT, unix.SYS_FCHMODAT,
	unix.SYS_FCHMODAT2, unix.SYS_FCHOWNAT, unix.SYS_TRUNCATE, unix.SYS_UTIMENSAT, unix.SYS_STATFS,
	unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_GETXATTR, unix.SYS_LGETXATTR, unix.SYS_LISTXATTR,
	unix.SYS_LLISTXATTR, unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR, unix.SYS_INOTIFY_ADD_WATCH,
	unix.SYS_SOCKET, unix.SYS_SOCKETPAIR, unix.SYS_CONNECT, unix.SYS_BIND, unix.SYS_LISTEN,
	unix.SYS_ACCEPT, unix.SYS_ACCEPT4,
	unix.SYS_SHMGET, unix.SYS_SHMAT, unix.SYS_SHMCTL, unix.SYS_SEMGET, unix.SYS_SEMOP, unix.SYS_SEMCTL,
	unix.SYS_SEMTIMEDOP, unix.SYS_MSGGET, unix.SYS_MSGSND, unix.SYS_MSGRCV, unix.SYS_MSGCTL,
	unix.SYS_MQ_OPEN, unix.SYS_MQ_UNLINK,
	unix.SYS_PIDFD_OPEN, unix.SYS_PIDFD_SEND_SIGNAL, unix.SYS_PROCESS_MADVISE, unix.SYS_TKILL,
	unix.SYS_RT_SIGQUEUEINFO, unix.SYS_RT_TGSIGQUEUEINFO, unix.SYS_UNAME,
	unix.SYS_SETRLIMIT, unix.SYS_PRLIMIT64, unix.SYS_MEMFD_SECRET,
}, workerLegacyDenied...)

// workerFilter is the worker's seccomp program: the sandbox's guard and list, the worker's
// list, and four calls allowed only in the form the Go runtime uses them.
func workerFilter(pid uint32) ([]bpf.Instruction, error) {
	p, err := filterGuard()
	if err != nil {
		return nil, err
	}
	for _, nr := range append(append([]uint32{}, deniedSyscalls...), workerDenied...) {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: nr, SkipTrue: 1}, bpf.RetConstant{Val: retEPERM})
	}
	p = append(p, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.SYS_CLONE3, SkipTrue: 1}, bpf.RetConstant{Val: retENOSYS})
	// clone only makes threads (the runtime's), never a process.
	p = append(p, argLacks(unix.SYS_CLONE, cloneFlagsArg, unix.CLONE_THREAD)...)
	p = append(p, argIn(unix.SYS_CLONE, cloneFlagsArg, nil, nsCloneFlags)...)
	// fstat by descriptor only (fstatat with AT_EMPTY_PATH is how arm64's runtime does fstat).
	p = append(p, argLacks(unix.SYS_NEWFSTATAT, 3, unix.AT_EMPTY_PATH)...)
	p = append(p, argLacks(unix.SYS_STATX, 2, unix.AT_EMPTY_PATH)...)
	// Signals to itself only (the runtime preempts its threads with tgkill): kill(0) would
	// reach forkbomb's process group.
	p = append(p, argNotIn(unix.SYS_KILL, 0, []uint32{pid})...)
	p = append(p, argNotIn(unix.SYS_TGKILL, 0, []uint32{pid})...)
	p = append(p, argIn(unix.SYS_IOCTL, 1, []uint32{unix.TIOCSTI, unix.TIOCLINUX}, 0)...)
	return append(p, bpf.RetConstant{Val: retAllow}), nil
}

// argLacks returns EPERM for syscall nr when the low word of args[arg] has no bit of mask.
func argLacks(nr uint32, arg int, mask uint32) []bpf.Instruction {
	return []bpf.Instruction{
		bpf.LoadAbsolute{Off: offNr, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: nr, SkipTrue: 3},
		bpf.LoadAbsolute{Off: offArgLo(arg), Size: 4},
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: mask, SkipTrue: 1},
		bpf.RetConstant{Val: retEPERM},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
}
