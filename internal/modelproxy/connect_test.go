package modelproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
	"github.com/forkbomb/forkbomb/internal/testutil"
)

// echoServer is a plain TCP echo on loopback that counts connections.
func echoServer(t *testing.T) (addr string, conns *testutil.Tally) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	conns = testutil.NewTally("tcp", ln.Addr().String())
	go func() {
		for {
			c, err := conns.Listener(ln).Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String(), conns
}

// dialConnect sends CONNECT target on the endpoint's socket and returns
// the response and the connection.
func dialConnect(t *testing.T, ep *Endpoint, target string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("unix", ep.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n", target, target, ep.Placeholder)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp, c, br
}

// TestConnect: CONNECT to a host in Allow tunnels (an echo server answers
// through it) and is a net_connect event allowed=true; to any other host,
// port or spelling it is 403, never dialled (the other servers count
// zero), and a net_connect event allowed=false. Absolute-form plain http
// is held to the same list.
func TestConnect(t *testing.T) {
	t.Parallel()
	allowed, allowedHits := echoServer(t)
	other, otherHits := echoServer(t)
	web := newUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain ok") })
	webAddr := strings.TrimPrefix(web.URL, "http://")
	_, ep, rec := startProxy(t, Options{Allow: []string{allowed, webAddr}})
	_, otherPort, _ := net.SplitHostPort(other)

	t.Run("allowed", func(t *testing.T) {
		resp, c, br := dialConnect(t, ep, allowed)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		fmt.Fprintf(c, "ping\n")
		line, err := br.ReadString('\n')
		if err != nil || line != "ping\n" {
			t.Fatalf("echo through the tunnel: %q %v", line, err)
		}
		if n := allowedHits.Count(t); n != 1 {
			t.Errorf("the allowed server saw %d connections", n)
		}
	})
	for _, target := range []string{other, "localhost:" + otherPort, "[::1]:" + otherPort, "127.0.0.1", "example.com:443", "*.example.com:443", "127.0.0.1:" + otherPort + "@x"} {
		t.Run("refused "+target, func(t *testing.T) {
			resp, _, _ := dialConnect(t, ep, target)
			if resp.StatusCode == http.StatusOK {
				t.Fatalf("LEAK: CONNECT %s tunnelled", target)
			}
		})
	}
	t.Run("absolute form", func(t *testing.T) {
		cl := client(ep)
		cl.Transport.(*http.Transport).Proxy = http.ProxyURL(mustURL(t, ep.ProxyURL()))
		resp, err := cl.Get(web.URL + "/x")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "plain ok" {
			t.Errorf("control: an allowed plain-http host was not proxied: %d %q", resp.StatusCode, b)
		}
		resp, err = cl.Get("http://" + other + "/x")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("LEAK: absolute-form http to %s: status %d", other, resp.StatusCode)
		}
	})
	time.Sleep(testutil.InFlight) // a connection the kernel may still be queueing
	if n := otherHits.Count(t); n != 0 {
		t.Errorf("LEAK: a host not allowed was dialled %d times", n)
	}
	var yes, no int
	for _, d := range of[event.NetConnectData](rec) {
		if d.Allowed {
			yes++
			continue
		}
		no++
		if d.Reason == "" || d.Host == "" {
			t.Errorf("a refusal without host or reason: %+v", d)
		}
	}
	// Eight refusals less the one net/http answers itself (400: user
	// info in a CONNECT authority never reaches the handler).
	if yes != 2 || no != 7 {
		t.Errorf("net_connect events: %d allowed, %d refused; want 2 and 7", yes, no)
	}
	scanEvents(t, rec, ep.Placeholder)
}

// TestCanonicalHostPort: the allow-list and the CONNECT targets are read
// by one function; spellings of one host agree and everything that is not
// a plain host is refused.
func TestCanonicalHostPort(t *testing.T) {
	t.Parallel()
	ok := map[string]string{
		"registry.npmjs.org":       "registry.npmjs.org:443",
		"Registry.NPMJS.org.":      "registry.npmjs.org:443",
		"pypi.org:8443":            "pypi.org:8443",
		"127.0.0.1:8080":           "127.0.0.1:8080",
		"[::1]:80":                 "[::1]:80",
		"[0:0::1]":                 "[::1]:443",
		"::1":                      "[::1]:443",
		"xn--bcher-kva.example":    "xn--bcher-kva.example:443",
		"::ffff:127.0.0.1":         "127.0.0.1:443",
		"a-b.c1.example.com:65535": "a-b.c1.example.com:65535",
	}
	for in, want := range ok {
		got, err := CanonicalHostPort(in, 443)
		if err != nil || got != want {
			t.Errorf("CanonicalHostPort(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "https://pypi.org", "pypi.org/simple", "*.pypi.org", "user@pypi.org", "pypi.org:0", "pypi.org:65536",
		"pypi.org:http", "localhost", "registry:8080", "pypi..org", "-a.org", "bücher.example", "1.2.3", "0x7f.1", "fe80::1%eth0", "a b", "[pypi.org]:443", "pypi.org:+443"} {
		if got, err := CanonicalHostPort(in, 443); !errors.Is(err, ErrAllow) {
			t.Errorf("CanonicalHostPort(%q) = %q, %v; want ErrAllow", in, got, err)
		}
	}
	got, err := ParseAllow("pypi.org, files.pythonhosted.org,PyPI.org")
	if err != nil || strings.Join(got, " ") != "pypi.org:443 files.pythonhosted.org:443" {
		t.Errorf("ParseAllow = %v, %v", got, err)
	}
	if _, err := ParseAllow("pypi.org,,x.org"); !errors.Is(err, ErrAllow) {
		t.Errorf("an empty entry: %v", err)
	}
}

// TestConnectRebinding: an allowed name whose DNS answer is this
// machine's loopback or a private address is not dialled (the echo server
// on loopback counts zero): only naming the address itself opens it.
func TestConnectRebinding(t *testing.T) {
	t.Parallel()
	echo, hits := echoServer(t)
	_, port, _ := net.SplitHostPort(echo)
	for _, answer := range []string{"127.0.0.1", "::1", "10.1.2.3", "169.254.169.254", "0.0.0.0"} {
		t.Run(answer, func(t *testing.T) {
			t.Parallel()
			p, ep, rec := startProxy(t, Options{Allow: []string{"registry.example.org:" + port}})
			p.lookup = func(context.Context, string) ([]net.IPAddr, error) {
				return []net.IPAddr{{IP: net.ParseIP(answer)}}, nil
			}
			resp, _, _ := dialConnect(t, ep, "registry.example.org:"+port)
			if resp.StatusCode == http.StatusOK {
				t.Fatalf("LEAK: an allowed name resolving to %s was tunnelled", answer)
			}
			evs := of[event.NetConnectData](rec)
			if len(evs) != 1 || !strings.Contains(evs[0].Reason, "loopback, private") {
				t.Errorf("events %v, want one naming the internal address", evs)
			}
		})
	}
	t.Cleanup(func() {
		time.Sleep(testutil.InFlight) // a connection the kernel may still be queueing
		if n := hits.Count(t); n != 0 {
			t.Errorf("LEAK: the loopback server was reached %d times", n)
		}
	})
}

// TestInternalAddresses: the addresses a name may not lead to, and public
// ones (the control) it may, through the dialer's last check too.
func TestInternalAddresses(t *testing.T) {
	t.Parallel()
	for _, a := range []string{"127.0.0.1", "127.9.9.9", "::1", "10.0.0.1", "172.16.0.1", "192.168.1.1", "fd00::1", "fe80::1", "169.254.169.254", "0.0.0.0", "::", "224.0.0.1", "::ffff:127.0.0.1",
		"100.64.0.1", "198.18.0.1", "192.0.0.1", "64:ff9b::a9fe:a9fe"} {
		if _, special := SpecialPurpose(netip.MustParseAddr(a)); !special {
			t.Errorf("%s is not seen as internal", a)
		}
		if err := refuseSpecial("tcp", netip.AddrPortFrom(netip.MustParseAddr(a), 443).String(), nil); !errors.Is(err, errInternalAddress) {
			t.Errorf("the dialer's check lets %s through: %v", a, err)
		}
	}
	for _, a := range []string{"104.18.0.1", "2606:4700::1", "8.8.8.8"} {
		if _, special := SpecialPurpose(netip.MustParseAddr(a)); special {
			t.Errorf("control: public %s is seen as internal", a)
		}
		if err := refuseSpecial("tcp", netip.AddrPortFrom(netip.MustParseAddr(a), 443).String(), nil); err != nil {
			t.Errorf("control: the dialer's check refuses public %s: %v", a, err)
		}
	}
}
