package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Proxy is the one host service a NetworkProxy command may reach. Inside
// the sandbox, 127.0.0.1:Port on the command's own loopback is served by a
// forwarder in the sandbox's init, which splices each connection to Socket
// on the host. Nothing else of the host's network is reachable, and the
// socket itself is not in the command's view (its folder is hidden): the
// command talks to the forwarder, never to the host's filesystem.
type Proxy struct {
	// Socket is a UNIX stream socket on the host, in a folder of its own:
	// the folder is hidden from the command, so nothing else in it is
	// reachable, and it must neither hold nor lie inside a path the policy
	// exposes.
	Socket string
	// Port is the TCP port on the sandbox's 127.0.0.1, 1024–65535 (the
	// init binds it without privileges). It is the sandbox's own loopback:
	// the same port on the host's loopback is another socket altogether.
	Port int
	// Listening: the service already listens on 127.0.0.1:Port of the
	// caller's own network namespace (forkbomb's tunnel forwarder in a
	// pod), so Socket is empty and nothing is bridged. Only the landlock
	// backend takes it, with Landlock ABI 4 or later: the command shares
	// the caller's network, may open only TCP sockets (and netlink, to
	// list the interfaces), connect only to Port, bind none, and send no
	// TCP Fast Open data. Landlock names ports, not addresses: Port on
	// another address the caller's network routes to is reachable too —
	// in a pod, the run's NetworkPolicy (where the CNI enforces it) is
	// what closes that.
	Listening bool
}

// maxProxyConns bounds the connections forwarded at once. Each holds two
// descriptors and two goroutines in the init and one connection to the
// host's service; beyond it new connections are closed at once, so a
// command cannot make the init exhaust its descriptors or the host
// service's patience.
const maxProxyConns = 64

// proxyDialTimeout bounds the wait for the host's service to accept.
const proxyDialTimeout = 10 * time.Second

// maxSunPath is the longest path connect(2) takes for a UNIX socket.
const maxSunPath = 107

// resolveProxy checks the proxy of a NetworkProxy policy, makes its socket
// path canonical and hides the socket's folder. It runs after the exposed
// paths are resolved.
func (r *resolved) resolveProxy() error {
	switch {
	case r.Network != NetworkProxy && r.Proxy != nil:
		return fmt.Errorf("%w: a proxy socket is given but the network is %s, not proxy", ErrInvalidPolicy, r.Network)
	case r.Network != NetworkProxy:
		return nil
	case r.Proxy == nil:
		return policyErr("Network", string(NetworkProxy), "needs a proxy socket (Policy.Proxy), which only forkbomb's own engines set")
	case r.Proxy.Listening:
		return r.resolveListeningProxy()
	case r.Mode == ModeLandlock && !r.NoSandbox:
		// Landlock's network rules name ports, not addresses, and without
		// a network namespace a loopback port is the host's: it cannot
		// confine this, so it is refused rather than approximated.
		return fmt.Errorf("%w: %w (the landlock backend has none)", ErrInvalidPolicy, ErrProxyNeedsNetns)
	}
	if r.Proxy.Port < 1024 || r.Proxy.Port > 65535 {
		return fmt.Errorf("%w: proxy port %d is not between 1024 and 65535", ErrInvalidPolicy, r.Proxy.Port)
	}
	if r.Proxy.Socket == "" {
		return fmt.Errorf("%w: no proxy socket given", ErrInvalidPolicy)
	}
	abs, err := filepath.Abs(r.Proxy.Socket)
	if err != nil {
		return fmt.Errorf("%w: proxy socket %s: %v", ErrInvalidPolicy, r.Proxy.Socket, err)
	}
	dir, err := canonicalDir(filepath.Dir(abs), "proxy socket folder", true)
	if err != nil {
		return err
	}
	name := filepath.Base(abs)
	sock := filepath.Join(dir, name)
	fi, err := os.Lstat(sock)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: proxy socket %s: no such socket", ErrInvalidPolicy, r.Proxy.Socket)
	}
	if err != nil {
		return fmt.Errorf("%w: proxy socket %s: %v", ErrInvalidPolicy, r.Proxy.Socket, err)
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("%w: proxy socket %s is not a socket", ErrInvalidPolicy, r.Proxy.Socket)
	}
	// The init reaches the socket as /proc/self/fd/N/NAME.
	if len(proxyDialPath(1<<31-1, name)) > maxSunPath {
		return fmt.Errorf("%w: proxy socket name %q is too long", ErrInvalidPolicy, name)
	}
	if err := CheckHide(dir); err != nil {
		return fmt.Errorf("%w: the proxy socket must be in a folder of its own, which is hidden from the command (%v)", ErrInvalidPolicy, err)
	}
	exposed := append(append(append([]string{r.Workdir}, r.ReadWrite...), r.ReadOnly...), r.Scratch...)
	if r.Overlay != nil {
		exposed = append(append(exposed, r.Overlay.Lower...), r.Overlay.Upper, r.Overlay.Work)
	}
	for _, e := range exposed {
		if within(e, dir) || within(dir, e) {
			return fmt.Errorf("%w: the proxy socket's folder %s overlaps %s, which the command sees; give the socket a folder of its own", ErrInvalidPolicy, dir, e)
		}
	}
	r.Proxy = &Proxy{Socket: sock, Port: r.Proxy.Port}
	r.Hide = append(r.Hide, dir)
	return nil
}

// resolveListeningProxy checks a proxy already listening in the caller's
// network (Proxy.Listening): the landlock backend alone (a network
// namespace of the sandbox's own would not reach it), with Landlock's
// network rules.
func (r *resolved) resolveListeningProxy() error {
	switch {
	case r.Proxy.Socket != "":
		return fmt.Errorf("%w: a listening proxy has no socket to bridge", ErrInvalidPolicy)
	case r.Proxy.Port < 1024 || r.Proxy.Port > 65535:
		return fmt.Errorf("%w: proxy port %d is not between 1024 and 65535", ErrInvalidPolicy, r.Proxy.Port)
	case r.NoSandbox:
		return nil
	case r.Mode != ModeLandlock:
		return fmt.Errorf("%w: a listening proxy needs the landlock backend (Policy.Mode %s): a network namespace of the sandbox's own would not reach it", ErrInvalidPolicy, ModeLandlock)
	case landlockNetABI() < 4:
		return fmt.Errorf("%w: a listening proxy needs Landlock's network rules (ABI 4, Linux 6.7); this kernel has ABI %d", ErrInvalidPolicy, landlockNetABI())
	}
	r.Proxy = &Proxy{Port: r.Proxy.Port, Listening: true}
	return nil
}

// proxyDialPath names the socket NAME in the folder open as descriptor fd.
// Through the descriptor, the folder need not be in the view at all.
func proxyDialPath(fd int, name string) string {
	return "/proc/self/fd/" + strconv.Itoa(fd) + "/" + name
}

// serveProxy accepts connections on ln until it is closed and splices each
// to a connection dial makes. Accept errors other than a closed listener
// (out of descriptors, say) are waited out, not fatal: the forwarder lives
// exactly as long as its listener.
func serveProxy(ln net.Listener, dial func() (net.Conn, error)) {
	slots := make(chan struct{}, maxProxyConns)
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		select {
		case slots <- struct{}{}:
		default:
			c.Close()
			continue
		}
		go func() {
			defer func() { <-slots }()
			forwardConn(c, dial)
		}()
	}
}

// forwardConn copies both ways until both sides are done, passing each
// side's end of input on as a half-close, so a client that sends its
// request and shuts down its writing still gets the whole reply.
func forwardConn(c net.Conn, dial func() (net.Conn, error)) {
	defer c.Close()
	up, err := dial()
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			dst.Close()
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
}

// listenProxyLoopback is the forwarder's listening socket: the port on
// 127.0.0.1 of whatever network namespace the caller is in.
func listenProxyLoopback(port int) (net.Listener, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("proxy port: %w", err)
	}
	return ln, nil
}
