package modelproxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// anyIPEnv marks the test binary re-executed in its own network namespace.
const anyIPEnv = "FORKBOMB_TEST_ANYIP_NETNS"

// TestDialSpecialPurpose: an allowed name whose DNS answer is any address
// that is not globally reachable is never dialled, and one that is, is.
// It runs in a network namespace of its own where every IPv4 and IPv6
// address is local (AnyIP: a "local" route for 0.0.0.0/0 and ::/0 on its
// loopback), so one listener there answers whatever address is dialled
// and records it: the probe sees every dial, from outside the proxy, and
// no packet leaves the namespace. The name's answer is each row's first,
// middle and last address (from the registry list), and the IPv4-mapped,
// NAT64 and 6to4 forms of refused IPv4 addresses. The controls: the
// global neighbours of those rows, and NAT64/6to4/mapped forms of a
// global address, are tunnelled and the listener sees exactly those
// addresses; an address the user names itself (allow:100.64.0.7) is
// dialled, as before.
func TestDialSpecialPurpose(t *testing.T) {
	if os.Getenv(anyIPEnv) != "1" {
		reexecInNetns(t)
		return
	}
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"route", "add", "local", "0.0.0.0/0", "dev", "lo"},
		{"-6", "route", "add", "local", "::/0", "dev", "lo"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	ln, err := net.Listen("tcp", "[::]:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	var mu sync.Mutex
	dialled := map[netip.Addr]int{}
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			dialled[c.LocalAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()]++
			mu.Unlock()
			accepted.Add(1)
			c.Close()
		}
	}()

	p, ep, rec := startProxy(t, Options{Allow: []string{"dial.example.org:" + port, "100.64.0.7:" + port}, RatePerMinute: 1 << 20})
	var answer atomic.Pointer[netip.Addr]
	p.lookup = func(context.Context, string) ([]net.IPAddr, error) {
		return []net.IPAddr{{IP: net.IP(answer.Load().AsSlice())}}, nil
	}
	connect := func(a netip.Addr, target string) int {
		answer.Store(&a)
		resp, c, _ := dialConnect(t, ep, target)
		c.Close()
		return resp.StatusCode
	}

	refused, global := registrySamples()
	for _, s := range []string{"100.64.0.1", "169.254.169.254", "127.0.0.1", "198.18.0.1", "192.0.0.1", "10.0.0.1"} {
		v4 := netip.MustParseAddr(s).As4()
		refused = append(refused,
			netip.AddrFrom16(netip.MustParseAddr(s).As16()), // ::ffff:a.b.c.d
			netip.AddrFrom16([16]byte{0, 0x64, 0xff, 0x9b, 10: 0, 11: 0, 12: v4[0], 13: v4[1], 14: v4[2], 15: v4[3]}),
			netip.AddrFrom16([16]byte{0x20, 0x02, v4[0], v4[1], v4[2], v4[3], 15: 1}))
	}
	for _, a := range refused {
		if st := connect(a, "dial.example.org:"+port); st == http.StatusOK {
			t.Errorf("LEAK: the allowed name answering %s was tunnelled", a)
		}
	}
	for _, s := range []string{"64:ff9b::808:808", "2002:808:808::1", "::ffff:8.8.8.8"} {
		global = append(global, netip.MustParseAddr(s))
	}
	for _, a := range global {
		if st := connect(a, "dial.example.org:"+port); st != http.StatusOK {
			t.Errorf("control: the allowed name answering global %s was refused: %d", a, st)
		}
	}
	if st := connect(netip.Addr{}, "100.64.0.7:"+port); st != http.StatusOK {
		t.Errorf("an address named in allow: was refused: %d", st)
	}
	// The proxy answers once it has dialled; the listener records the
	// connection on its own goroutine, which a loaded machine may run
	// later: wait for as many as were tunnelled (a refused one that was
	// dialled would make more, never fewer).
	for i := 0; i < 3000 && accepted.Load() < int64(len(global)+1); i++ {
		time.Sleep(10 * time.Millisecond)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, a := range refused {
		if n := dialled[a.Unmap()]; n > 0 {
			t.Errorf("LEAK: %s was dialled %d times", a, n)
		}
	}
	for _, a := range global {
		if dialled[a.Unmap()] == 0 {
			t.Errorf("control: the listener never saw global %s: the probe is blind", a)
		}
	}
	if dialled[netip.MustParseAddr("100.64.0.7")] != 1 {
		t.Errorf("control: the named address was not dialled: %v", dialled[netip.MustParseAddr("100.64.0.7")])
	}
	var reasons int
	for _, d := range of[event.NetConnectData](rec) {
		if d.Allowed && strings.Contains(d.Reason, "not globally reachable") {
			reasons++
		}
	}
	if reasons < len(refused) {
		t.Errorf("%d refusals name the reason, want %d", reasons, len(refused))
	}
	t.Logf("%d refused answers never dialled; %d global ones dialled", len(refused), len(global))
}

// reexecInNetns runs this test again in a new network namespace (and a
// user namespace when not root, so that it may configure it).
func reexecInNetns(t *testing.T) {
	t.Helper()
	testutil.Need(t, "ip")
	cmd := exec.Command(os.Args[0], "-test.run=^TestDialSpecialPurpose$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), anyIPEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() != 0 {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		testutil.SkipOrFail(t, "no network namespace of its own here: %v", err)
	}
	t.Logf("in its own network namespace:\n%s", out)
	if err != nil {
		t.Fatalf("the test in its network namespace failed: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestDialSpecialPurpose") {
		t.Fatalf("the test in its network namespace did not pass")
	}
}
