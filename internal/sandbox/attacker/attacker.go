//go:build linux

// Package attacker is the hostile program the sandbox's tests run inside a
// sandbox: each verb tries one way out and prints what it got. The tests
// never trust that output for the verdict where an outside check exists
// (files on disk, listeners, host process tables); it is evidence only.
package attacker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/forkbomb/forkbomb/internal/sandbox"
)

// Main runs one attack verb and returns the exit status: 0 when the attempt
// succeeded (the sandbox leaked), 3 when it was refused.
func Main(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "attacker: no verb")
		return 2
	}
	verb, args := args[0], args[1:]
	switch verb {
	case "tcp":
		return dial("tcp", args[0])
	case "udp":
		return dial("udp", args[0])
	case "unix":
		return dial("unix", args[0])
	case "http":
		return httpCall(args)
	case "dns":
		addrs, err := net.LookupHost(args[0])
		return report(err, fmt.Sprint(addrs))
	case "kill":
		pid, _ := strconv.Atoi(args[0])
		return report(syscall.Kill(pid, syscall.SIGKILL), "killed")
	case "read":
		leaked := false
		for _, p := range args {
			if data, err := os.ReadFile(p); err == nil {
				fmt.Printf("read %s: %s\n", p, data)
				leaked = true
			} else {
				fmt.Printf("read %s: %v\n", p, err)
			}
		}
		if leaked {
			return 0
		}
		return 3
	case "write":
		return report(os.WriteFile(args[0], []byte(args[1]), 0o644), "wrote "+args[0])
	case "env":
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
		return 0
	case "daemonize":
		return daemonize(args)
	case "sleep":
		d, _ := time.ParseDuration(args[0])
		time.Sleep(d)
		return 0
	case "syscall":
		return trySyscall(args[0])
	case "int80":
		return int80Getpid()
	case "alloc":
		return alloc(args[0])
	case "forkbomb":
		return forkbomb(args)
	case "tiocsti":
		c := byte('X')
		_, _, e := unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
		if e != 0 {
			return report(e, "")
		}
		return report(nil, "injected")
	case "tiocsti-hi":
		// the same request with the high word of the 64-bit argument set:
		// the kernel reads only the low 32 bits.
		c := byte('X')
		req := uintptr(unix.TIOCSTI) | 1<<32
		_, _, e := unix.Syscall(unix.SYS_IOCTL, 0, req, uintptr(unsafe.Pointer(&c)))
		if e != 0 {
			return report(e, "")
		}
		return report(nil, "injected")
	case "exec":
		// A compiled helper that runs a program itself, with no shell.
		err := syscall.Exec(args[0], args, os.Environ())
		return report(err, "")
	case "anon-exec":
		return anonExec(args)
	case "nested":
		return nested(args)
	case "nested-proxy":
		return nestedProxy(args)
	case "status":
		data, err := os.ReadFile("/proc/self/status")
		fmt.Print(string(data))
		return report(err, "")
	}
	fmt.Fprintln(os.Stderr, "attacker: unknown verb", verb)
	return 2
}

func report(err error, ok string) int {
	if err != nil {
		fmt.Println("refused:", err)
		return 3
	}
	fmt.Println("ok:", ok)
	return 0
}

// httpCall GETs args[0] and prints the reply, or with a size in args[1]
// POSTs that many bytes and checks the reply echoes them whole (through a
// forwarder, both directions and the half-close of each).
func httpCall(args []string) int {
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 20 * time.Second}
	var body []byte
	var resp *http.Response
	var err error
	if len(args) > 1 {
		n, _ := strconv.Atoi(args[1])
		body = bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
		resp, err = client.Post(args[0], "application/octet-stream", bytes.NewReader(body))
	} else {
		resp, err = client.Get(args[0])
	}
	if err != nil {
		return report(err, "")
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return report(err, "")
	}
	if body != nil {
		if !bytes.Equal(got, body) {
			return report(fmt.Errorf("echo of %d bytes came back as %d different bytes", len(body), len(got)), "")
		}
		return report(nil, fmt.Sprintf("echoed %d bytes", len(body)))
	}
	return report(nil, fmt.Sprintf("%s %s", resp.Status, got))
}

func dial(network, addr string) int {
	c, err := net.DialTimeout(network, addr, 2*time.Second)
	if err != nil {
		return report(err, "")
	}
	defer c.Close()
	_, err = c.Write([]byte("leak\n"))
	return report(err, "connected to "+addr)
}

// daemonize starts the given command as a detached daemon (new session,
// parent gone), then returns at once.
func daemonize(args []string) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	if err := cmd.Start(); err != nil {
		return report(err, "")
	}
	_ = cmd.Process.Release()
	return report(nil, fmt.Sprintf("daemon pid %d", cmd.Process.Pid))
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

// alloc allocates and touches the given number of bytes.
func alloc(size string) int {
	n, _ := strconv.ParseInt(size, 10, 64)
	chunks := [][]byte{}
	for got := int64(0); got < n; got += 16 << 20 {
		b := make([]byte, 16<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		chunks = append(chunks, b)
	}
	fmt.Println("ok: allocated", len(chunks)*16, "MiB")
	return 0
}

// forkbomb starts sleeping children until fork fails or n are running,
// and prints how many it started.
func forkbomb(args []string) int {
	n, _ := strconv.Atoi(args[0])
	started := 0
	for ; started < n; started++ {
		cmd := exec.Command("/bin/sleep", args[1])
		if err := cmd.Start(); err != nil {
			fmt.Println("refused after", started, "children:", err)
			return 3
		}
	}
	fmt.Println("ok: started", started)
	return 0
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

// Marker returns an argument that makes a process findable in the host's
// process table.
func Marker(tag string) string {
	return strings.ReplaceAll(fmt.Sprintf("%d.%s", time.Now().UnixNano()%1000000, tag), "/", "_")
}
