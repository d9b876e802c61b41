package sandbox

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The seccomp filter is assembled here rather than with a policy library:
// the checks it needs (a foreign-architecture guard, 32-bit argument
// comparisons on the low word as the kernel reads them, clone flags) are
// short, and a library's per-architecture syscall tables cost every start
// of the binary — twice per sandbox — more than the whole filter does.
// The syscall numbers come from golang.org/x/sys/unix (seccomp_<arch>.go).

// nsCloneFlags are the clone(2) flags that create namespaces; clone with
// any of them fails, so the command cannot make a nested user namespace and
// regain capabilities in it.
const nsCloneFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

const (
	retAllow  = uint32(unix.SECCOMP_RET_ALLOW)
	retKill   = uint32(unix.SECCOMP_RET_KILL_PROCESS)
	retEPERM  = uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.EPERM)
	retENOSYS = uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.ENOSYS)
)

// Offsets in struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
)

// offArgLo is the offset of the low 32 bits of args[i] (little-endian).
func offArgLo(i int) uint32 { return uint32(16 + 8*i) }

// applySeccomp loads the filter on the calling thread (no TSYNC: only the
// thread that forks the command is filtered).
func applySeccomp(cfg *initConfig) error {
	prog, err := buildFilter(filterOptions{
		offline:       cfg.Mode == ModeLandlock && cfg.NewNet,
		tcpOnly:       cfg.Mode == ModeLandlock && cfg.NewNet && cfg.ListenPort > 0,
		restrictsExec: cfg.Programs != nil,
	})
	if err != nil {
		return err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return fmt.Errorf("assemble filter: %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, in := range raw {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("load filter: %w", errno)
	}
	return nil
}

// filterOptions are the parts of the filter that depend on the policy.
type filterOptions struct {
	// offline: no network namespace, so sockets are refused here.
	offline bool
	// tcpOnly, with offline: TCP sockets are allowed besides netlink
	// (Landlock's network rules hold their ports: a listening proxy's),
	// and no TCP Fast Open data is sent (sendto/sendmsg with
	// MSG_FASTOPEN connect without connect(2)).
	tcpOnly bool
	// restrictsExec: a program rule is set, so no file without a name may
	// be made executable (see memfdRule).
	restrictsExec bool
}

// buildFilter returns the whole program. Every check is a self-contained
// block that reloads what it reads and either returns or falls through to
// the next block; the last instruction allows.
// filterGuard is the start of every filter forkbomb loads (the sandbox's
// and the world worker's): only this architecture's syscall table, the
// syscall number loaded for the rules that follow.
func filterGuard() ([]bpf.Instruction, error) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		return nil, fmt.Errorf("seccomp: big-endian machines are not supported")
	}
	if nativeArch == 0 {
		return nil, fmt.Errorf("seccomp: unsupported architecture")
	}
	// A syscall made through another ABI (int 0x80 on x86_64) is looked up
	// in another table, where our numbers mean other calls: kill it.
	p := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: nativeArch, SkipTrue: 1},
		bpf.RetConstant{Val: retKill},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	if x32Bit != 0 {
		// x32 syscalls share the architecture value and set this bit.
		p = append(p, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32Bit, SkipFalse: 1}, bpf.RetConstant{Val: retENOSYS})
	}
	return p, nil
}

func buildFilter(o filterOptions) ([]bpf.Instruction, error) {
	p, err := filterGuard()
	if err != nil {
		return nil, err
	}
	for _, nr := range deniedSyscalls {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(nr), SkipTrue: 1}, bpf.RetConstant{Val: retEPERM})
	}
	// clone3 passes its flags in memory a filter cannot read; ENOSYS makes
	// libc and language runtimes fall back to clone, whose flags it can.
	p = append(p, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.SYS_CLONE3, SkipTrue: 1}, bpf.RetConstant{Val: retENOSYS})
	p = append(p, argIn(unix.SYS_CLONE, cloneFlagsArg, nil, nsCloneFlags)...)
	// TIOCSTI pushes bytes into a terminal's input queue: the classic way
	// out of a sandbox that shares the user's terminal; TIOCLINUX does the
	// same on a virtual console. The kernel reads the request as 32 bits,
	// so a 64-bit comparison would be bypassed by setting the high word.
	p = append(p, argIn(unix.SYS_IOCTL, 1, []uint32{unix.TIOCSTI, unix.TIOCLINUX}, 0)...)
	if o.restrictsExec {
		p = append(p, memfdRule()...)
	}
	switch {
	case o.offline && o.tcpOnly:
		p = append(p, tcpSocketsOnly()...)
		p = append(p, argIn(unix.SYS_SENDTO, 3, nil, unix.MSG_FASTOPEN)...)
		p = append(p, argIn(unix.SYS_SENDMSG, 2, nil, unix.MSG_FASTOPEN)...)
		p = append(p, argIn(unix.SYS_SENDMMSG, 3, nil, unix.MSG_FASTOPEN)...)
	case o.offline:
		// Without a network namespace: no socket family but netlink
		// (interface listing): no IP, no UNIX sockets to host services.
		p = append(p, argNotIn(unix.SYS_SOCKET, 0, []uint32{unix.AF_NETLINK})...)
	}
	return append(p, bpf.RetConstant{Val: retAllow}), nil
}

// tcpSocketsOnly refuses every socket(2) but netlink and TCP over IPv4 or
// IPv6: the domain is AF_NETLINK, or AF_INET/AF_INET6 with the type
// SOCK_STREAM (its flags masked off) and the protocol 0 or IPPROTO_TCP —
// not SCTP or MPTCP, which Landlock's TCP rules do not cover.
func tcpSocketsOnly() []bpf.Instruction {
	return []bpf.Instruction{
		bpf.LoadAbsolute{Off: offNr, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.SYS_SOCKET, SkipTrue: 11},
		bpf.LoadAbsolute{Off: offArgLo(0), Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_NETLINK, SkipTrue: 9},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_INET, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.AF_INET6, SkipTrue: 6},
		bpf.LoadAbsolute{Off: offArgLo(1), Size: 4},
		bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0xf},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.SOCK_STREAM, SkipTrue: 3},
		bpf.LoadAbsolute{Off: offArgLo(2), Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipTrue: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.IPPROTO_TCP, SkipTrue: 1},
		bpf.RetConstant{Val: retEPERM},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
}

// memfdRule refuses memfd_create under a program rule. A memfd is a file
// on the kernel's internal shmem mount: Landlock does not check files there
// (its execute right never applies), the mount is not noexec, and so an
// allowed interpreter could copy any program into one and run it —
// execve("/proc/self/fd/N"), execveat(N, "", AT_EMPTY_PATH), or the
// dynamic loader mapping it. vm.memfd_noexec=2 (Linux 6.3, per pid
// namespace) is not enough: it only withholds the exec bits, and
// mmap(PROT_EXEC) of a MFD_NOEXEC_SEAL memfd still succeeds, which is all
// ld.so needs; nor can an unprivileged user namespace set it, nor the
// landlock backend, which has no pid namespace. ENOSYS, as on kernels
// before 3.17, is what programs that use memfds (JVMs, Chromium) already
// fall back from, to a file in a tmpfs — which is a named file the program
// rules judge.
//
// O_TMPFILE and deleted files need no rule, nor does execveat with
// AT_EMPTY_PATH: the kernel judges such a file by the mount and the folder
// it was made in (noexec, Landlock's rule for that folder) whether it is
// run through /proc/self/fd/N or by descriptor, and under a deny-list it
// is no worse than the copy a deny-list already cannot stop.
func memfdRule() []bpf.Instruction {
	return []bpf.Instruction{
		bpf.LoadAbsolute{Off: offNr, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.SYS_MEMFD_CREATE, SkipTrue: 1},
		bpf.RetConstant{Val: retENOSYS},
	}
}

// argIn returns EPERM for syscall nr when the low word of args[arg] equals
// one of vals, or has any bit of mask set. It falls through otherwise.
func argIn(nr uint32, arg int, vals []uint32, mask uint32) []bpf.Instruction {
	n := len(vals)
	if mask != 0 {
		n++
	}
	out := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offNr, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: nr, SkipTrue: uint8(n + 3)},
		bpf.LoadAbsolute{Off: offArgLo(arg), Size: 4},
	}
	i := 0
	for _, v := range vals {
		out = append(out, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(n - i)})
		i++
	}
	if mask != 0 {
		out = append(out, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: mask, SkipTrue: uint8(n - i)})
	}
	return append(out, bpf.Jump{Skip: 1}, bpf.RetConstant{Val: retEPERM}, bpf.LoadAbsolute{Off: offNr, Size: 4})
}

// argNotIn returns EPERM for syscall nr unless the low word of args[arg]
// is one of vals.
func argNotIn(nr uint32, arg int, vals []uint32) []bpf.Instruction {
	n := len(vals)
	out := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offNr, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: nr, SkipTrue: uint8(n + 2)},
		bpf.LoadAbsolute{Off: offArgLo(arg), Size: 4},
	}
	for i, v := range vals {
		out = append(out, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(n - i)})
	}
	return append(out, bpf.RetConstant{Val: retEPERM}, bpf.LoadAbsolute{Off: offNr, Size: 4})
}

// deniedSyscalls fail with EPERM inside the sandbox. Each is a way out of
// the namespaces (mount family, unshare, setns, pivot_root, chroot), a way
// into another process (ptrace, process_vm_*, pidfd_getfd, kcmp,
// move_pages), a large kernel attack surface that builds and tests rarely
// need (bpf, perf_event_open, keyctl, userfaultfd, io_uring), or host
// administration (modules, kexec, reboot, swap, clocks, syslog, and
// open_by_handle_at — the "shocker" container escape). Architectures add
// their legacy calls (archDenied).
var deniedSyscalls = append([]uint32{
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_PIDFD_GETFD,
	unix.SYS_KCMP, unix.SYS_MOVE_PAGES, unix.SYS_MIGRATE_PAGES, unix.SYS_MOUNT, unix.SYS_UMOUNT2,
	unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT, unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE, unix.SYS_FSOPEN,
	unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR, unix.SYS_UNSHARE,
	unix.SYS_SETNS, unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
	unix.SYS_FANOTIFY_INIT, unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE, unix.SYS_KEXEC_LOAD,
	unix.SYS_KEXEC_FILE_LOAD, unix.SYS_REBOOT, unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_ACCT,
	unix.SYS_QUOTACTL, unix.SYS_QUOTACTL_FD, unix.SYS_SYSLOG, unix.SYS_VHANGUP,
	unix.SYS_LOOKUP_DCOOKIE, unix.SYS_NFSSERVCTL, unix.SYS_OPEN_BY_HANDLE_AT,
	unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME,
	unix.SYS_ADJTIMEX, unix.SYS_SETHOSTNAME, unix.SYS_SETDOMAINNAME,
}, archDenied...)
