package attacker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// platformVerb runs the verbs that attack what only Linux has: its system
// calls, its terminals' ioctls, /proc, nested sandboxes.
func platformVerb(verb string, args []string) (int, bool) {
	switch verb {
	case "syscall":
		return trySyscall(args[0]), true
	case "int80":
		return int80Getpid(), true
	case "tiocsti":
		c := byte('X')
		_, _, e := unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
		if e != 0 {
			return report(e, ""), true
		}
		return report(nil, "injected"), true
	case "tiocsti-hi":
		// the same request with the high word of the 64-bit argument set:
		// the kernel reads only the low 32 bits.
		c := byte('X')
		req := uintptr(unix.TIOCSTI) | 1<<32
		_, _, e := unix.Syscall(unix.SYS_IOCTL, 0, req, uintptr(unsafe.Pointer(&c)))
		if e != 0 {
			return report(e, ""), true
		}
		return report(nil, "injected"), true
	case "anon-exec":
		return anonExec(args), true
	case "nested":
		return nested(args), true
	case "nested-proxy":
		return nestedProxy(args), true
	case "tfo":
		return fastOpen(args[0]), true
	case "status":
		data, err := os.ReadFile("/proc/self/status")
		fmt.Print(string(data))
		return report(err, ""), true
	}
	return 0, false
}

// fastOpen sends data to the IPv4 address addr with TCP Fast Open:
// sendto(MSG_FASTOPEN) connects without a connect(2) call.
func fastOpen(addr string) int {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Is4() {
		return report(fmt.Errorf("tfo: %q is not IPv4 HOST:PORT", addr), "")
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return report(err, "")
	}
	defer unix.Close(fd)
	err = unix.Sendto(fd, []byte("leak\n"), unix.MSG_FASTOPEN, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()})
	return report(err, "sent to "+addr)
}

// trySyscall attempts one privileged or escape-prone operation.
func trySyscall(name string) int {
	var err error
	switch name {
	case "unshare-user":
		// A raw clone with CLONE_NEWUSER: a nested user namespace would
		// give back every capability inside it.
		pid, _, e := unix.RawSyscall6(unix.SYS_CLONE, uintptr(unix.CLONE_NEWUSER|unix.SIGCHLD), 0, 0, 0, 0, 0)
		if e == 0 && pid == 0 {
			unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
		}
		if e != 0 {
			err = e
		}
	case "unshare":
		err = unix.Unshare(unix.CLONE_NEWUSER)
	case "mount":
		err = unix.Mount("tmpfs", "/tmp", "tmpfs", 0, "")
	case "remount":
		err = unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_BIND, "")
	case "ptrace":
		_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_ATTACH, 1, 0, 0, 0, 0)
		if e != 0 {
			err = e
		}
	case "bpf":
		_, _, e := unix.Syscall(unix.SYS_BPF, 0, 0, 0)
		if e != 0 && e != unix.EINVAL && e != unix.EFAULT {
			err = e
		}
	case "io_uring":
		_, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, 0, 0)
		if e != 0 && e != unix.EFAULT && e != unix.EINVAL {
			err = e
		}
	case "keyctl":
		_, _, e := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, uintptr(0xfffffffd), 0) // session keyring
		if e != 0 {
			err = e
		}
	case "perf":
		_, _, e := unix.Syscall6(unix.SYS_PERF_EVENT_OPEN, 0, 0, 0, 0, 0, 0)
		if e != 0 && e != unix.EFAULT && e != unix.EINVAL {
			err = e
		}
	case "userfaultfd":
		_, _, e := unix.Syscall(unix.SYS_USERFAULTFD, 0, 0, 0)
		if e != 0 {
			err = e
		}
	case "process_vm_readv":
		_, _, e := unix.Syscall6(unix.SYS_PROCESS_VM_READV, uintptr(os.Getppid()), 0, 0, 0, 0, 0)
		if e != 0 && e != unix.EINVAL {
			err = e
		}
	case "setns":
		f, e := os.Open("/proc/self/ns/net")
		if e == nil {
			err = unix.Setns(int(f.Fd()), 0)
		} else {
			err = e
		}
	case "sysctl":
		err = os.WriteFile("/proc/sys/kernel/domainname", []byte("pwned"), 0)
	case "init_module":
		_, _, e := unix.Syscall(unix.SYS_INIT_MODULE, 0, 0, 0)
		if e != 0 && e != unix.EFAULT && e != unix.EINVAL {
			err = e
		}
	default:
		fmt.Fprintln(os.Stderr, "attacker: unknown syscall", name)
		return 2
	}
	return report(err, name)
}

// nested runs a sandbox from inside a sandbox, as a user of forkbomb
// would who runs forkbomb in a confined shell: the inner one cannot make
// namespaces (the outer seccomp filter refuses) and must fall back, by
// trial, to Landlock alone.
func nested(args []string) int {
	var out strings.Builder
	res, err := sandbox.Run(context.Background(), sandbox.Policy{Command: args, Workdir: "."}, sandbox.Stdio{Stdout: &out, Stderr: &out})
	if err != nil {
		fmt.Println("refused:", err)
		return 3
	}
	fmt.Printf("mode=%s code=%d warnings=%q output=%q\n", res.Mode, res.ExitCode, res.Warnings, out.String())
	return 0
}

// nestedProxy asks for a NetworkProxy sandbox where user namespaces are
// refused (inside a sandbox): the fallback backend cannot confine it, so
// Run must refuse rather than run it on Landlock alone.
func nestedProxy(args []string) int {
	dir, err := os.MkdirTemp("", "proxy-")
	if err != nil {
		return report(err, "")
	}
	defer os.RemoveAll(dir)
	ln, err := net.Listen("unix", dir+"/api.sock")
	if err != nil {
		return report(err, "")
	}
	defer ln.Close()
	res, err := sandbox.Run(context.Background(), sandbox.Policy{
		Command: args, Workdir: ".",
		Network: sandbox.NetworkProxy, Proxy: &sandbox.Proxy{Socket: dir + "/api.sock", Port: 8080},
	}, sandbox.Stdio{})
	if err != nil {
		fmt.Printf("refused (needs netns: %v): %v\n", errors.Is(err, sandbox.ErrProxyNeedsNetns), err)
		return 3
	}
	fmt.Printf("ran: mode=%s code=%d\n", res.Mode, res.ExitCode)
	return 0
}
