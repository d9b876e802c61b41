package modelproxy

import (
	"fmt"
	"net/netip"
)

// reach is a registry row's "Globally Reachable" column.
type reach int8

const (
	reachNo  reach = iota // False
	reachYes              // True
	reachNA               // N/A: a tunnelling or deprecated prefix
)

// specialBlock is one row of a registry: a prefix, its name and RFC, and
// whether a datagram to it is forwarded beyond its administrative domain.
type specialBlock struct {
	prefix netip.Prefix
	name   string
	rfc    string
	global reach
	// embeds is the bit offset of an IPv4 address carried inside an IPv6
	// one (IPv4-mapped, NAT64, 6to4): such an address goes, in the end,
	// to that IPv4 address, and is judged by it. 0: none.
	embeds int
}

func row(prefix, name, rfc string, g reach) specialBlock {
	return specialBlock{prefix: netip.MustParsePrefix(prefix), name: name, rfc: rfc, global: g}
}

func carrier(prefix, name, rfc string, g reach, at int) specialBlock {
	b := row(prefix, name, rfc, g)
	b.embeds = at
	return b
}

// specialBlocks are IANA's IPv4 Special-Purpose Address Registry and IPv6
// Special-Purpose Address Registry (RFC 6890, RFC 8190), one entry per
// row, as published in 2025 (the IPv6 registry last updated 2025-10-09,
// its newest row RFC 9780's; the IPv4 registry's newest RFC 8880's), and
// the rows of the IPv4 and IPv6 Address Space registries that are not
// unicast (multicast, IPv6 site-local). IPv6 outside 2000::/3, the only
// block IANA allocates for global unicast, is refused by SpecialPurpose
// as well, so a new row there needs no entry; a new row inside 2000::/3
// or in IPv4 does: compare this list with the registries when they move.
//
// Why the proxy needs it: an allowed name is resolved by the proxy, and
// whoever controls its DNS (or a fork's allowed host that is a CNAME the
// attacker moved) can point it anywhere. A tailnet or a cloud's metadata
// service in 100.64.0.0/10 (shared address space), a benchmarking lab in
// 198.18.0.0/15, the NAT64 or DS-Lite hosts of 192.0.0.0/24, a ULA, the
// NAT64 form of 169.254.169.254: each is somebody's internal network,
// which --network allow:NAME never meant to open (SSRF, CWE-918).
var specialBlocks = []specialBlock{
	// IPv4 Special-Purpose Address Registry.
	row("0.0.0.0/8", `"This network"`, "RFC 791 §3.2", reachNo),
	row("0.0.0.0/32", `"This host on this network"`, "RFC 1122 §3.2.1.3", reachNo),
	row("10.0.0.0/8", "Private-Use", "RFC 1918", reachNo),
	row("100.64.0.0/10", "Shared Address Space", "RFC 6598", reachNo),
	row("127.0.0.0/8", "Loopback", "RFC 1122 §3.2.1.3", reachNo),
	row("169.254.0.0/16", "Link Local", "RFC 3927", reachNo),
	row("172.16.0.0/12", "Private-Use", "RFC 1918", reachNo),
	row("192.0.0.0/24", "IETF Protocol Assignments", "RFC 6890 §2.1", reachNo),
	row("192.0.0.0/29", "IPv4 Service Continuity Prefix", "RFC 7335", reachNo),
	row("192.0.0.8/32", "IPv4 dummy address", "RFC 7600", reachNo),
	row("192.0.0.9/32", "Port Control Protocol Anycast", "RFC 7723", reachYes),
	row("192.0.0.10/32", "Traversal Using Relays around NAT Anycast", "RFC 8155", reachYes),
	row("192.0.0.170/32", "NAT64/DNS64 Discovery", "RFC 8880, RFC 7050 §2.2", reachNo),
	row("192.0.0.171/32", "NAT64/DNS64 Discovery", "RFC 8880, RFC 7050 §2.2", reachNo),
	row("192.0.2.0/24", "Documentation (TEST-NET-1)", "RFC 5737", reachNo),
	row("192.31.196.0/24", "AS112-v4", "RFC 7535", reachYes),
	row("192.52.193.0/24", "AMT", "RFC 7450", reachYes),
	row("192.88.99.0/24", "Deprecated (6to4 Relay Anycast)", "RFC 7526", reachNA),
	row("192.168.0.0/16", "Private-Use", "RFC 1918", reachNo),
	row("192.175.48.0/24", "Direct Delegation AS112 Service", "RFC 7534", reachYes),
	row("198.18.0.0/15", "Benchmarking", "RFC 2544", reachNo),
	row("198.51.100.0/24", "Documentation (TEST-NET-2)", "RFC 5737", reachNo),
	row("203.0.113.0/24", "Documentation (TEST-NET-3)", "RFC 5737", reachNo),
	row("240.0.0.0/4", "Reserved", "RFC 1112 §4", reachNo),
	row("255.255.255.255/32", "Limited Broadcast", "RFC 8190, RFC 919 §7", reachNo),
	// IPv4 Address Space Registry: not in the special-purpose one.
	row("224.0.0.0/4", "Multicast", "RFC 5771", reachNo),

	// IPv6 Special-Purpose Address Registry.
	row("::1/128", "Loopback Address", "RFC 4291", reachNo),
	row("::/128", "Unspecified Address", "RFC 4291", reachNo),
	carrier("::ffff:0:0/96", "IPv4-mapped Address", "RFC 4291", reachNo, 96),
	carrier("64:ff9b::/96", "IPv4-IPv6 Translat.", "RFC 6052", reachYes, 96),
	row("64:ff9b:1::/48", "IPv4-IPv6 Translat. (local use)", "RFC 8215", reachNo),
	row("100::/64", "Discard-Only Address Block", "RFC 6666", reachNo),
	row("100:0:0:1::/64", "Dummy IPv6 Prefix", "RFC 9780", reachNo),
	row("2001::/23", "IETF Protocol Assignments", "RFC 2928", reachNo),
	row("2001::/32", "TEREDO", "RFC 4380, RFC 8190", reachNA),
	row("2001:1::1/128", "Port Control Protocol Anycast", "RFC 7723", reachYes),
	row("2001:1::2/128", "Traversal Using Relays around NAT Anycast", "RFC 8155", reachYes),
	row("2001:1::3/128", "DNS-SD Service Registration Protocol Anycast", "RFC 9665", reachYes),
	row("2001:2::/48", "Benchmarking", "RFC 5180, RFC Errata 1752", reachNo),
	row("2001:3::/32", "AMT", "RFC 7450", reachYes),
	row("2001:4:112::/48", "AS112-v6", "RFC 7535", reachYes),
	row("2001:10::/28", "Deprecated (previously ORCHID)", "RFC 4843", reachNA),
	row("2001:20::/28", "ORCHIDv2", "RFC 7343", reachYes),
	row("2001:30::/28", "Drone Remote ID Protocol Entity Tags (DETs) Prefix", "RFC 9374", reachYes),
	row("2001:db8::/32", "Documentation", "RFC 3849", reachNo),
	carrier("2002::/16", "6to4", "RFC 3056", reachNA, 16),
	row("2620:4f:8000::/48", "Direct Delegation AS112 Service", "RFC 7534", reachYes),
	row("3fff::/20", "Documentation", "RFC 9637", reachNo),
	row("5f00::/16", "Segment Routing (SRv6) SIDs", "RFC 9602", reachNo),
	row("fc00::/7", "Unique-Local", "RFC 4193, RFC 8190", reachNo),
	row("fe80::/10", "Link-Local Unicast", "RFC 4291", reachNo),
	// IPv6 Address Space Registry: not in the special-purpose one.
	row("fec0::/10", "Site-local (deprecated)", "RFC 3879", reachNo),
	row("ff00::/8", "Multicast", "RFC 4291", reachNo),
}

// globalUnicast6 is the one IPv6 block IANA allocates from for global
// unicast (IPv6 Address Space registry); the rest is reserved by the IETF.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// SpecialPurpose reports whether a is not a globally reachable address,
// and why: it lies in a registry row whose Globally Reachable is not True
// (where rows nest — 192.0.0.9/32, True, inside 192.0.0.0/24, False — the
// refusal wins: no model API or package registry is served from a PCP or
// TURN anycast address, and the stricter reading cannot be rebound); it
// is IPv6 outside 2000::/3; or it carries an IPv4 address (IPv4-mapped,
// NAT64 64:ff9b::/96, 6to4) that is itself refused. An IPv4-compatible
// address (::a.b.c.d) lies in ::/8, outside 2000::/3, and is refused
// whatever it embeds; Teredo (2001::/32) lies in 2001::/23.
func SpecialPurpose(a netip.Addr) (why string, special bool) {
	if !a.IsValid() {
		return "not an address", true
	}
	a = a.WithZone("")
	for _, b := range specialBlocks {
		if !b.prefix.Contains(a) {
			continue
		}
		if b.embeds > 0 {
			// No refused row holds a carrier row, so the address
			// inside decides (64:ff9b::/96 lies outside 2000::/3).
			v4 := embeddedIPv4(a, b.embeds)
			if why, special := SpecialPurpose(v4); special {
				return fmt.Sprintf("%s (%s, %s) of %s: %s", b.name, b.prefix, b.rfc, v4, why), true
			}
			return "", false
		}
		if b.global != reachYes {
			return fmt.Sprintf("%s (%s, %s)", b.name, b.prefix, b.rfc), true
		}
	}
	if a.Is6() && !globalUnicast6.Contains(a) {
		return "reserved by the IETF (outside 2000::/3, IPv6 global unicast)", true
	}
	return "", false
}

// embeddedIPv4 is the IPv4 address at bit offset at (a multiple of 8) of
// an IPv6 address.
func embeddedIPv4(a netip.Addr, at int) netip.Addr {
	b := a.As16()
	i := at / 8
	return netip.AddrFrom4([4]byte{b[i], b[i+1], b[i+2], b[i+3]})
}
