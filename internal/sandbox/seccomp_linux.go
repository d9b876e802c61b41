package sandbox

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM inside the sandbox. Each is either a way
// out of the namespaces (mount family, unshare, setns, pivot_root, chroot),
// a way into another process (ptrace, process_vm_*, pidfd_getfd, kcmp,
// move_pages), a large kernel attack surface rarely needed by builds and
// tests (bpf, perf_event_open, keyctl, userfaultfd, io_uring), or a host
// administration call (modules, kexec, reboot, swap, syslog, open_by_handle_at
// — the "shocker" container escape).
var deniedSyscalls = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
	"move_pages", "migrate_pages",
	"mount", "umount2", "umount", "pivot_root", "chroot", "move_mount", "open_tree",
	"fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	"unshare", "setns",
	"bpf", "perf_event_open", "userfaultfd", "fanotify_init",
	"keyctl", "add_key", "request_key",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog",
	"iopl", "ioperm", "uselib", "vhangup", "lookup_dcookie", "nfsservctl",
	"open_by_handle_at", "name_to_handle_at",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname",
}

// nsCloneFlags are the clone(2) flags that create namespaces; clone with
// any of them fails, so the command cannot make a nested user namespace and
// regain capabilities in it.
const nsCloneFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

const (
	retEPERM  = uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.EPERM)
	retENOSYS = uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.ENOSYS)
)

// applySeccomp loads the filter on the calling thread (no TSYNC: only the
// thread that forks the command is filtered).
func applySeccomp(cfg *initConfig) error {
	prog, err := buildFilter(cfg.Mode == ModeLandlock && cfg.NewNet)
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

// buildFilter returns the whole BPF program. The named deny list and the
// clone-flag check are assembled by go-seccomp-bpf; in front of them go the
// checks the library cannot express: a foreign-architecture guard (the
// library would apply its default action, "allow", to 32-bit syscalls made
// through int 0x80) and comparisons of 32-bit arguments on their low word
// only, as the kernel reads them (a check of the full 64 bits is bypassed by
// setting the high word).
func buildFilter(offline bool) ([]bpf.Instruction, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		return nil, fmt.Errorf("seccomp: big-endian machines are not supported")
	}
	var names []string
	for _, n := range deniedSyscalls {
		if _, ok := info.SyscallNames[n]; ok {
			names = append(names, n)
		}
	}
	groups := []seccomp.SyscallGroup{
		{Action: seccomp.Action(retEPERM), Names: names},
		{Action: seccomp.Action(retEPERM), NamesWithCondtions: []seccomp.NameWithConditions{{
			Name:       "clone",
			Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.BitsSet, Value: nsCloneFlags}},
		}}},
	}
	if _, ok := info.SyscallNames["clone3"]; ok {
		// clone3 passes its flags in memory a filter cannot read; ENOSYS
		// makes libc and language runtimes fall back to clone.
		groups = append(groups, seccomp.SyscallGroup{Action: seccomp.Action(retENOSYS), Names: []string{"clone3"}})
	}
	policy := seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: groups}
	body, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}

	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(unix.SECCOMP_RET_KILL_PROCESS)},
	}
	// TIOCSTI pushes bytes into a terminal's input queue: the classic way
	// out of a sandbox that shares the user's terminal. TIOCLINUX can do the
	// same on a virtual console.
	prog = append(prog, argIn(uint32(info.SyscallNames["ioctl"]), 1, []uint32{unix.TIOCSTI, unix.TIOCLINUX}, true)...)
	if offline {
		// Without a network namespace: no socket family but netlink
		// (interface listing) — no IP, no UNIX sockets to host services.
		prog = append(prog, argIn(uint32(info.SyscallNames["socket"]), 0, []uint32{unix.AF_NETLINK}, false)...)
	}
	return append(prog, body...), nil
}

// argIn returns instructions that, for syscall nr, compare the low 32 bits
// of argument arg with vals: with deny, a match returns EPERM; without, a
// value not in vals returns EPERM. Anything else falls through to the
// instructions after them, which reload what they need.
func argIn(nr uint32, arg int, vals []uint32, deny bool) []bpf.Instruction {
	n := len(vals)
	out := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 0, Size: 4}, // seccomp_data.nr
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: nr, SkipTrue: uint8(n + 3)},
		bpf.LoadAbsolute{Off: uint32(16 + 8*arg), Size: 4}, // low word of args[arg]
	}
	for i, v := range vals {
		if deny {
			// match: to the RET; no match: next compare, then the JA over it
			out = append(out, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(n - i)})
		} else {
			// match: past the RET
			out = append(out, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(n - i + 1)})
		}
	}
	if deny {
		out = append(out, bpf.Jump{Skip: 1})
	} else {
		out = append(out, bpf.Jump{Skip: 0})
	}
	return append(out, bpf.RetConstant{Val: retEPERM})
}
