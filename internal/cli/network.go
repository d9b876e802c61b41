package cli

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"

	"github.com/forkbomb/forkbomb/internal/modelproxy"
)

// networkHelp is the help of run's --network.
const networkHelp = `the forks' network: none (only their own loopback), or allow:HOST[,HOST…] — ` +
	`those hosts (port 443 unless HOST:PORT) through forkbomb's CONNECT proxy (HTTPS_PROXY in the fork), every connection recorded, everything else refused`

// parseRunNetwork reads run's --network: "none", or "allow:" and a list
// of hosts (modelproxy.ParseAllow). "host" is refused, alone or in the
// list: a race's forks never get the host's network. An address that is
// not globally reachable (loopback, private, shared, link-local…:
// modelproxy.SpecialPurpose) is allowed only when named as such, with a
// warning: it is this machine (or a network it is on), not the internet;
// a name is never dialled at one.
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
		if a, err := netip.ParseAddr(h); err == nil {
			if why, special := modelproxy.SpecialPurpose(a); special {
				fmt.Fprintf(warn, "forkbomb: warning: --network allow:%s is not on the public internet (%s) but this machine or a network it is on: every fork can reach that service\n", hp, why)
			}
		}
	}
	return hosts, nil
}
