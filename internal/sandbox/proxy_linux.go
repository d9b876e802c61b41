package sandbox

import (
	"fmt"
	"net"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// proxyConfig is the init's part of a NetworkProxy policy.
//
// The init reaches the host socket through a descriptor of its folder,
// opened in the read-only view of the host before the view hides that
// folder; the folder is never mounted where the command could see it. So
// the command cannot connect to the socket directly, nor to anything else
// beside it, and the only way out is the forwarder, which connects to
// nothing but Name.
type proxyConfig struct {
	Dir  string `json:"dir"`  // the socket's folder, canonical (hidden in the view)
	Name string `json:"name"` // the socket's name in Dir
	Port int    `json:"port"` // on the sandbox's own 127.0.0.1

	dirFD int // O_PATH descriptor of Dir, taken by openProxyDir
}

func newProxyConfig(p *Proxy) *proxyConfig {
	if p == nil || p.Listening {
		return nil
	}
	return &proxyConfig{Dir: filepath.Dir(p.Socket), Name: filepath.Base(p.Socket), Port: p.Port, dirFD: -1}
}

// listenPort is the port of a proxy listening in the caller's network,
// 0 for none.
func listenPort(p *Proxy) int {
	if p == nil || !p.Listening {
		return 0
	}
	return p.Port
}

// openProxyDir takes the descriptor of the socket's folder from the new
// root while it is still the host's read-only view (newRoot, before the
// home, /run and Policy.Hide masks go on). The descriptor is O_PATH and
// close-on-exec, and the command is started with descriptors 0–2 only:
// a host descriptor leaking into a container is how runc's CVE-2024-21626
// escaped, and the command cannot reach this one through /proc/1/fd
// either, the init being non-dumpable.
func openProxyDir(p *proxyConfig) error {
	fd, err := openNoSymlinks(newRoot + p.Dir)
	if err != nil {
		return fmt.Errorf("proxy socket folder %s: %w", p.Dir, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		unix.Close(fd)
		return fmt.Errorf("proxy socket folder %s: not a folder", p.Dir)
	}
	p.dirFD = fd
	return nil
}

// startProxy listens on the sandbox's own 127.0.0.1:Port and forwards
// every connection to the host socket. It runs in the init after the view
// is built and loopback is up, before the command starts, so the port is
// the init's (the command cannot take it first) and open when the command
// looks. The forwarder ends with the init, that is when the command does.
func startProxy(p *proxyConfig) error {
	if p.dirFD < 0 {
		return fmt.Errorf("proxy: the socket's folder was not opened")
	}
	ln, err := listenProxyLoopback(p.Port)
	if err != nil {
		return err
	}
	path := proxyDialPath(p.dirFD, p.Name)
	go serveProxy(ln, func() (net.Conn, error) { return net.DialTimeout("unix", path, proxyDialTimeout) })
	return nil
}
