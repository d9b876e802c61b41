package modelproxy

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ParseAllow reads the list of --network allow:HOST[,HOST…] (without the
// "allow:"): comma-separated hosts, each a DNS name or IP address with an
// optional port (default 443). It returns them canonical (see
// CanonicalHostPort), without duplicates, in the order given.
func ParseAllow(list string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, h := range strings.Split(list, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, fmt.Errorf("%w: an empty host in %q", ErrAllow, list)
		}
		c, err := CanonicalHostPort(h, 443)
		if err != nil {
			return nil, err
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, nil
}

// CanonicalHostPort returns s (host, host:port, [v6]:port or a bare IPv6
// address) as "host:port" with the host canonical: an IP address in its
// shortest form, a name in lower case ASCII (an IDN only in its xn--
// form) without a trailing dot. The same function reads
// the allow-list and each CONNECT target, so they compare as strings.
//
// Refused: schemes, paths, user info, wildcards (a pattern would let a
// fork pick any subdomain — name each host), empty labels, ports outside
// 1–65535. A name is not resolved here: the proxy dials it as named, so
// the allow-list means what the user wrote, whatever DNS says later.
func CanonicalHostPort(s string, defaultPort int) (string, error) {
	bad := func(why string) error { return fmt.Errorf("%w: %q: %s", ErrAllow, s, why) }
	if s == "" || len(s) > 300 {
		return "", bad("empty or too long")
	}
	if strings.Contains(s, "://") {
		return "", bad("a host, not a URL (no scheme)")
	}
	if strings.ContainsAny(s, "/@?#*\\ \t") {
		return "", bad("a host name or IP address only: no path, user, wildcard or space")
	}
	host, port := s, strconv.Itoa(defaultPort)
	switch {
	case strings.HasPrefix(s, "["):
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			if strings.HasSuffix(s, "]") {
				h = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
			} else {
				return "", bad(err.Error())
			}
		} else {
			port = p
		}
		host = h
		if net.ParseIP(host) == nil || !strings.Contains(host, ":") {
			return "", bad("brackets only around an IPv6 address")
		}
	case strings.Count(s, ":") == 1:
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			return "", bad(err.Error())
		}
		host, port = h, p
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return "", bad("port must be a number 1–65535")
	}
	canon, err := canonicalHost(host)
	if err != nil {
		return "", bad(err.Error())
	}
	return net.JoinHostPort(canon, port), nil
}

// canonicalHost is host as an IP address or an ASCII DNS name.
func canonicalHost(host string) (string, error) {
	if i := strings.IndexByte(host, '%'); i >= 0 {
		return "", fmt.Errorf("no IPv6 zone")
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.String(), nil
	}
	// An internationalised name is refused rather than converted: its
	// xn-- form is what DNS and TLS see, and a conversion here could
	// differ from the client's (UTS #46 versions, confusables), so the
	// user names the exact host in that form.
	for _, c := range host {
		if c > 0x7e {
			return "", fmt.Errorf("not ASCII: give an internationalised name in its xn-- form")
		}
	}
	ascii := strings.ToLower(strings.TrimSuffix(host, "."))
	if ascii == "" || len(ascii) > 253 {
		return "", fmt.Errorf("not a valid host name")
	}
	for _, label := range strings.Split(ascii, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "", fmt.Errorf("not a valid host name (label %q)", label)
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", fmt.Errorf("not a valid host name (label %q)", label)
			}
		}
	}
	// A single label ("localhost", "host", "registry") is refused: it is
	// resolved through search domains and /etc/hosts, so what it names
	// depends on the machine; name the host fully.
	if !strings.Contains(ascii, ".") {
		return "", fmt.Errorf("a single-label name; give the fully qualified name or an IP address")
	}
	// A name made only of digits and dots that is not an IP address
	// ("1.2.3", "0x7f.1") is refused: resolvers read such forms as
	// addresses in ways that differ, and an allow-list must not be
	// ambiguous.
	if strings.Trim(ascii, "0123456789.") == "" || strings.HasPrefix(ascii, "0x") {
		return "", fmt.Errorf("not an IP address in standard form, nor a name")
	}
	return ascii, nil
}
