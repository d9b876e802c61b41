package modelproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/forkbomb/forkbomb/internal/event"
)

// Bounds on tunnels and plain proxying to allowed hosts.
const (
	dialTimeout = 15 * time.Second
	tunnelIdle  = 5 * time.Minute // a tunnel with no byte either way this long is cut
	maxTunnels  = 64              // per fork at once
)

// connect serves CONNECT host:port: a tunnel if the host is allowed, 403
// otherwise. Every attempt is a net_connect event.
func (e *Endpoint) connect(w http.ResponseWriter, r *http.Request) {
	hp, ok := e.allowed(w, r.Host, 443)
	if !ok {
		return
	}
	up, err := e.p.dialAllowed(r.Context(), "tcp", hp.String())
	if err != nil {
		e.netEvent(hp, true, "dial failed: "+dialReason(err))
		refuse(w, http.StatusBadGateway, "could not connect to "+hp.String())
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		refuse(w, http.StatusInternalServerError, "cannot tunnel on this connection")
		return
	}
	c, brw, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if !e.track(c, true) || !e.track(up, true) {
		c.Close()
		up.Close()
		e.track(c, false)
		return
	}
	defer func() { e.track(c, false); e.track(up, false) }()
	e.netEvent(hp, true, "")
	_ = c.SetWriteDeadline(time.Now().Add(writeWait))
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		c.Close()
		up.Close()
		return
	}
	// What the client sent after its CONNECT is in brw's buffer already.
	splice(c, brw.Reader, up)
}

// hostPort is a checked target.
type hostPort struct{ host, port string }

func (h hostPort) String() string { return net.JoinHostPort(h.host, h.port) }

// allowed checks a target against the allow-list and the rate; when it
// refuses, it has answered and sent the event.
func (e *Endpoint) allowed(w http.ResponseWriter, target string, defPort int) (hostPort, bool) {
	c, err := CanonicalHostPort(target, defPort)
	var hp hostPort
	if err == nil {
		hp.host, hp.port, _ = net.SplitHostPort(c)
	} else {
		hp.host = clip(target, 200)
	}
	switch {
	case err != nil:
		e.netEvent(hp, false, "not a host name or address")
		refuse(w, http.StatusBadRequest, "not a host name or address")
	case !e.p.allow[c]:
		e.netEvent(hp, false, "not in --network allow:")
		refuse(w, http.StatusForbidden, c+" is not an allowed host (--network allow:HOST)")
	case e.countTunnels() >= maxTunnels:
		e.netEvent(hp, false, "too many connections")
		refuse(w, http.StatusServiceUnavailable, "too many connections at once")
	default:
		msg, over := e.overRate(w)
		if !over {
			return hp, true
		}
		e.netEvent(hp, false, "rate limit")
		refuse(w, http.StatusTooManyRequests, msg)
	}
	return hp, false
}

func (e *Endpoint) countTunnels() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.tunnels) / 2
}

func (e *Endpoint) netEvent(hp hostPort, allowed bool, reason string) {
	d := event.NetConnectData{Host: hp.host, Allowed: allowed, Reason: reason}
	if n, err := strconv.Atoi(hp.port); err == nil {
		d.Port = &n
	}
	e.event(d)
}

// splice copies both ways until both are done or the tunnel is idle for
// tunnelIdle, then closes both ends.
func splice(c net.Conn, fromClient io.Reader, up net.Conn) {
	var last sync.Mutex
	seen := time.Now()
	touch := func() { last.Lock(); seen = time.Now(); last.Unlock() }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		t := time.NewTicker(tunnelIdle / 10)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				last.Lock()
				idle := time.Since(seen) > tunnelIdle
				last.Unlock()
				if idle {
					c.Close()
					up.Close()
					return
				}
			}
		}
	}()
	var wg sync.WaitGroup
	wg.Add(2)
	cp := func(dst net.Conn, src io.Reader) {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				touch()
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	go cp(up, fromClient)
	go cp(c, up)
	wg.Wait()
	c.Close()
	up.Close()
}

// plain serves absolute-form proxying (http://host/path) to an allowed
// host; port 80 unless named. Redirects are passed back as they are: the
// client's next request comes through here and is checked again.
func (e *Endpoint) plain(w http.ResponseWriter, r *http.Request) {
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		e.netEvent(hostPort{host: clip(r.URL.Host, 200)}, false, "only http:// in absolute form")
		refuse(w, http.StatusBadRequest, "only http:// URLs are proxied in absolute form (use CONNECT for https)")
		return
	}
	hp, ok := e.allowed(w, r.URL.Host, 80)
	if !ok {
		return
	}
	e.netEvent(hp, true, "")
	max := e.p.o.MaxRequestBytes
	if r.ContentLength > max {
		refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", max))
		return
	}
	// The body streams to the host as it comes (within max), in full
	// duplex: by default net/http consumes and closes an incoming body
	// once the answer's header is written, while the transport may still
	// be reading it; the transport then drops the host's connection, and
	// an answer the host began before reading the whole request reaches
	// the fork cut short (TestPlainEarlyAnswer: about 1 in 100 was).
	_ = http.NewResponseController(w).EnableFullDuplex()
	var body io.Reader = http.NoBody
	if r.ContentLength != 0 {
		body = http.MaxBytesReader(w, r.Body, max)
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	u := *r.URL
	u.Host = hp.String()
	out, err := http.NewRequestWithContext(ctx, r.Method, u.String(), body)
	if err != nil {
		refuse(w, http.StatusBadRequest, "malformed request")
		return
	}
	copyPlainHeaders(out.Header, r.Header)
	out.ContentLength = r.ContentLength
	resp, err := e.p.plainTransport.RoundTrip(out)
	if err != nil {
		refuse(w, http.StatusBadGateway, "could not reach "+hp.String())
		return
	}
	defer resp.Body.Close()
	copyResponseHeaders(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	streamBody(http.NewResponseController(w), w, resp.Body, &meter{over: true})
}

// errInternalAddress: a name resolved to an address that is not
// globally reachable (SpecialPurpose).
var errInternalAddress = errors.New("the name resolves to an address that is not globally reachable (loopback, private, shared, link-local, documentation or another special-purpose block)")

// dialAllowed dials an allowed host. A name is resolved here and dialled
// only at a globally reachable address (SpecialPurpose): an allowed name
// whose DNS answer is (or is made, by rebinding) 127.0.0.1, a private
// address, a tailnet's or a cloud metadata service's 100.64.0.0/10, or
// the NAT64 form of one, would otherwise open this machine's own services
// or its networks to the fork (SSRF, CWE-918). The check is made twice:
// on the answer, and on the socket's own destination just before the
// connect (the dialer's Control), so what is checked is what is dialled.
// Such a place is reachable only by naming its address itself
// (allow:10.0.0.5; the CLI warns).
func (p *Proxy) dialAllowed(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	var d net.Dialer
	if net.ParseIP(host) != nil {
		return d.DialContext(ctx, network, addr)
	}
	d.Control = refuseSpecial
	ips, err := p.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	var last error = errInternalAddress
	for _, ip := range ips {
		a, ok := netip.AddrFromSlice(ip.IP)
		if !ok {
			continue
		}
		// A 16-byte IPv4 answer is dialled as IPv4: say it so.
		a = a.Unmap()
		if why, special := SpecialPurpose(a); special {
			last = fmt.Errorf("%w: %s is %s", errInternalAddress, a, why)
			continue
		}
		c, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		last = err
	}
	return nil, last
}

// refuseSpecial is the dialer's Control for a name: it sees the socket's
// destination as the kernel will get it, after every resolution.
func refuseSpecial(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %q is not an address", errInternalAddress, address)
	}
	if why, special := SpecialPurpose(ap.Addr()); special {
		return fmt.Errorf("%w: %s is %s", errInternalAddress, ap.Addr(), why)
	}
	return nil
}

// dialReason is a dial error for an event: the internal-address refusal
// by name, anything else in general terms.
func dialReason(err error) string {
	if errors.Is(err, errInternalAddress) {
		return err.Error()
	}
	return "could not connect"
}
