package cli

import (
	"strings"
	"testing"
)

// TestNetworkAllowWarns: an address the user names in --network allow: is
// allowed as before, with a warning when it is not globally reachable —
// a tailnet's 100.64.0.0/10 as well as loopback and private ranges; a
// public address and a name get none (the control).
func TestNetworkAllowWarns(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		allow, want string
	}{
		{"allow:127.0.0.1:8080", "Loopback"},
		{"allow:10.0.0.5", "Private-Use"},
		{"allow:100.64.0.7", "Shared Address Space"},
		{"allow:198.18.0.1", "Benchmarking"},
		{"allow:[fd7a:115c:a1e0::1]", "Unique-Local"},
		{"allow:[64:ff9b::a9fe:a9fe]", "Link Local"},
		{"allow:8.8.8.8", ""},
		{"allow:pypi.org", ""},
	} {
		t.Run(c.allow, func(t *testing.T) {
			var warn strings.Builder
			hosts, err := parseRunNetwork(c.allow, &warn)
			if err != nil || len(hosts) != 1 {
				t.Fatalf("parseRunNetwork(%q) = %v, %v; want it allowed", c.allow, hosts, err)
			}
			if c.want == "" && warn.Len() > 0 {
				t.Errorf("control: %s warns: %s", c.allow, warn.String())
			}
			if c.want != "" && !strings.Contains(warn.String(), c.want) {
				t.Errorf("%s: warning %q, want one naming %s", c.allow, warn.String(), c.want)
			}
		})
	}
}
