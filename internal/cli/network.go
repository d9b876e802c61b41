package cli

import (
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/forkbomb/forkbomb/internal/modelproxy"
)

// networkHelp is the help of run's --network.
const networkHelp = `the forks' network: none (only their own loopback), or allow:HOST[,HOST…] — ` +
	`those hosts (port 443 unless HOST:PORT) through forkbomb's CONNECT proxy (HTTPS_PROXY in the fork), every connection recorded, everything else refused`

// parseRunNetwork reads run's --network: "none", or "allow:" and a list
// of hosts (modelproxy.ParseAllow). "host" is refused, alone or in the
// list: a race's forks never get the host's network. A loopback or
// private address is allowed only when named as such, with a warning: it
// is this machine (or its network), not the internet.
func parseRunNetwork(v string, warn io.Writer) ([]string, error) {
	if v == "" || v == "none" {
		return nil, nil
	}
	list, ok := strings.CutPrefix(v, "allow:")
	if !ok {
		return nil, fmt.Errorf("--network %q: want none or allow:HOST[,HOST…] (a race's forks never get the host's network)", v)
	}
	for _, h := range strings.Split(list, ",") {
		if strings.TrimSpace(h) == "host" {
			return nil, fmt.Errorf("--network %q: allow: cannot be combined with host", v)
		}
	}
	hosts, err := modelproxy.ParseAllow(list)
	if err != nil {
		return nil, fmt.Errorf("--network: %w", err)
	}
	for _, hp := range hosts {
		h, _, _ := net.SplitHostPort(hp)
		if ip := net.ParseIP(h); ip != nil && (ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified()) {
			fmt.Fprintf(warn, "forkbomb: warning: --network allow:%s is this machine or its local network, not the internet: every fork can reach that service\n", hp)
		}
	}
	return hosts, nil
}
