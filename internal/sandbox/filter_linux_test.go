package sandbox

import (
	"encoding/binary"
	"fmt"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompData lays out struct seccomp_data as a little-endian kernel
// hands it to the filter, for x/net/bpf's interpreter, whose 32-bit loads
// are big-endian (network order): each 32-bit word is stored big-endian,
// and a 64-bit argument's low word first, as on the little-endian machines
// the filter supports.
func seccompData(arch uint32, nr int32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], uint32(nr))
	binary.BigEndian.PutUint32(b[4:], arch)
	for i, a := range args {
		binary.BigEndian.PutUint32(b[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(b[20+8*i:], uint32(a>>32))
	}
	return b
}

// TestFilterRules runs the seccomp program in x/net/bpf's interpreter over
// crafted syscalls, so every rule is checked on every kernel, including the
// ones a live attack cannot reach here (int 0x80 where the kernel has no
// i386 entry, x32).
func TestFilterRules(t *testing.T) {
	for _, o := range []filterOptions{{}, {offline: true}, {restrictsExec: true}, {offline: true, restrictsExec: true}} {
		offline := o.offline
		prog, err := buildFilter(o)
		if err != nil {
			t.Fatal(err)
		}
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatalf("the kernel would reject this program too: %v", err)
		}
		run := func(d []byte) uint32 {
			r, err := vm.Run(d)
			if err != nil {
				t.Fatal(err)
			}
			return uint32(r)
		}
		cases := []struct {
			name string
			data []byte
			want uint32
		}{
			{"write allowed", seccompData(nativeArch, unix.SYS_WRITE, 1, 0, 0), retAllow},
			{"i386 getpid killed", seccompData(unix.AUDIT_ARCH_I386, 20), retKill},
			{"ptrace", seccompData(nativeArch, unix.SYS_PTRACE), retEPERM},
			{"mount", seccompData(nativeArch, unix.SYS_MOUNT), retEPERM},
			{"unshare", seccompData(nativeArch, unix.SYS_UNSHARE, unix.CLONE_NEWUSER), retEPERM},
			{"bpf", seccompData(nativeArch, unix.SYS_BPF), retEPERM},
			{"io_uring_setup", seccompData(nativeArch, unix.SYS_IO_URING_SETUP), retEPERM},
			{"clone3 falls back", seccompData(nativeArch, unix.SYS_CLONE3), retENOSYS},
			{"clone thread allowed", seccompData(nativeArch, unix.SYS_CLONE, unix.CLONE_VM|unix.CLONE_THREAD|unix.CLONE_SIGHAND), retAllow},
			{"clone newuser", seccompData(nativeArch, unix.SYS_CLONE, unix.CLONE_NEWUSER|uint64(unix.SIGCHLD)), retEPERM},
			{"clone newns high word set", seccompData(nativeArch, unix.SYS_CLONE, 1<<40|unix.CLONE_NEWNS), retEPERM},
			{"ioctl TIOCSTI", seccompData(nativeArch, unix.SYS_IOCTL, 0, unix.TIOCSTI), retEPERM},
			{"ioctl TIOCSTI high word", seccompData(nativeArch, unix.SYS_IOCTL, 0, 1<<32|unix.TIOCSTI), retEPERM},
			{"ioctl TIOCLINUX", seccompData(nativeArch, unix.SYS_IOCTL, 0, unix.TIOCLINUX), retEPERM},
			{"ioctl TCGETS allowed", seccompData(nativeArch, unix.SYS_IOCTL, 0, unix.TCGETS), retAllow},
			{"socket netlink allowed", seccompData(nativeArch, unix.SYS_SOCKET, unix.AF_NETLINK), retAllow},
		}
		if x32Bit != 0 {
			cases = append(cases, struct {
				name string
				data []byte
				want uint32
			}{"x32 write", seccompData(nativeArch, int32(x32Bit|1)), retENOSYS})
		}
		inet := retAllow
		if offline {
			inet = retEPERM
		}
		cases = append(cases,
			struct {
				name string
				data []byte
				want uint32
			}{"socket inet", seccompData(nativeArch, unix.SYS_SOCKET, unix.AF_INET), inet},
			struct {
				name string
				data []byte
				want uint32
			}{"socket inet high word", seccompData(nativeArch, unix.SYS_SOCKET, 1<<32|unix.AF_INET), inet},
			struct {
				name string
				data []byte
				want uint32
			}{"socket unix", seccompData(nativeArch, unix.SYS_SOCKET, unix.AF_UNIX), inet},
		)
		memfd := retAllow
		if o.restrictsExec {
			memfd = retENOSYS
		}
		for _, fl := range []uint64{0, unix.MFD_CLOEXEC, unix.MFD_NOEXEC_SEAL, unix.MFD_EXEC | 1<<40} {
			cases = append(cases, struct {
				name string
				data []byte
				want uint32
			}{fmt.Sprintf("memfd_create flags %#x", fl), seccompData(nativeArch, unix.SYS_MEMFD_CREATE, 0, fl), memfd})
		}
		for _, c := range cases {
			if got := run(c.data); got != c.want {
				t.Errorf("%+v %s: got %#x, want %#x", o, c.name, got, c.want)
			}
		}
	}
}

// TestFilterTCPOnly: with a listening proxy (Proxy.Listening) the filter
// lets TCP sockets through, over IPv4 and IPv6 and with any type flags,
// and netlink; it refuses every other socket — UDP, raw, UNIX, SCTP and
// MPTCP over IP, a protocol in the high word — and TCP Fast Open sends,
// which connect without connect(2). The control is the same call without
// the flag, allowed.
func TestFilterTCPOnly(t *testing.T) {
	prog, err := buildFilter(filterOptions{offline: true, tcpOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatalf("the kernel would reject this program too: %v", err)
	}
	const sctp, mptcp = 132, 262
	for _, c := range []struct {
		name string
		data []byte
		want uint32
	}{
		{"tcp v4", seccompData(nativeArch, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0), retAllow},
		{"tcp v4 flags, IPPROTO_TCP", seccompData(nativeArch, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP), retAllow},
		{"tcp v6", seccompData(nativeArch, unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_STREAM, 0), retAllow},
		{"netlink", seccompData(nativeArch, unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, 0), retAllow},
		{"udp v4", seccompData(nativeArch, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM, 0), retEPERM},
		{"udp v6 flags", seccompData(nativeArch, unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0), retEPERM},
		{"raw", seccompData(nativeArch, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_RAW, 1), retEPERM},
		{"unix", seccompData(nativeArch, unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM, 0), retEPERM},
		{"packet", seccompData(nativeArch, unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW, 0), retEPERM},
		{"sctp stream", seccompData(nativeArch, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, sctp), retEPERM},
		{"mptcp", seccompData(nativeArch, unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_STREAM, mptcp), retEPERM},
		{"tcp with a protocol in the high word", seccompData(nativeArch, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 1<<32|sctp), retEPERM},
		{"sendto", seccompData(nativeArch, unix.SYS_SENDTO, 3, 0, 1, 0), retAllow},
		{"sendto fast open", seccompData(nativeArch, unix.SYS_SENDTO, 3, 0, 1, unix.MSG_FASTOPEN), retEPERM},
		{"sendmsg", seccompData(nativeArch, unix.SYS_SENDMSG, 3, 0, unix.MSG_NOSIGNAL), retAllow},
		{"sendmsg fast open", seccompData(nativeArch, unix.SYS_SENDMSG, 3, 0, unix.MSG_FASTOPEN|unix.MSG_NOSIGNAL), retEPERM},
		{"sendmmsg fast open", seccompData(nativeArch, unix.SYS_SENDMMSG, 3, 0, 1, unix.MSG_FASTOPEN), retEPERM},
		{"write", seccompData(nativeArch, unix.SYS_WRITE, 1, 0, 0), retAllow},
		{"ptrace still denied", seccompData(nativeArch, unix.SYS_PTRACE), retEPERM},
	} {
		r, err := vm.Run(c.data)
		if err != nil {
			t.Fatal(err)
		}
		if uint32(r) != c.want {
			t.Errorf("%s: got %#x, want %#x", c.name, uint32(r), c.want)
		}
	}
}
