package modelproxy

import (
	"math/big"
	"net/netip"
	"strings"
	"testing"
)

// addrAdd is a plus n (n may be negative), in a's family; ok false when
// that leaves the family.
func addrAdd(a netip.Addr, n int64) (netip.Addr, bool) {
	b := a.AsSlice()
	v := new(big.Int).SetBytes(b)
	v.Add(v, big.NewInt(n))
	if v.Sign() < 0 || v.BitLen() > len(b)*8 {
		return netip.Addr{}, false
	}
	out := make([]byte, len(b))
	v.FillBytes(out)
	r, _ := netip.AddrFromSlice(out)
	return r, true
}

// span is the first, a middle and the last address of p.
func span(p netip.Prefix) (first, mid, last netip.Addr) {
	first = p.Masked().Addr()
	bits := first.BitLen() - p.Bits()
	size := new(big.Int).Lsh(big.NewInt(1), uint(bits))
	b := new(big.Int).SetBytes(first.AsSlice())
	at := func(off *big.Int) netip.Addr {
		v := new(big.Int).Add(b, off)
		out := make([]byte, len(first.AsSlice()))
		v.FillBytes(out)
		a, _ := netip.AddrFromSlice(out)
		return a
	}
	mid = at(new(big.Int).Rsh(size, 1))
	last = at(new(big.Int).Sub(size, big.NewInt(1)))
	return first, mid, last
}

// refusedByTable is what the registry list says of a: inside a row whose
// Globally Reachable is not True (carrier rows aside), or IPv6 outside
// 2000::/3.
func refusedByTable(a netip.Addr) bool {
	for _, b := range specialBlocks {
		if b.embeds == 0 && b.global != reachYes && b.prefix.Contains(a) {
			return true
		}
		if b.embeds > 0 && b.prefix.Contains(a) {
			return refusedByTable(embeddedIPv4(a, b.embeds))
		}
	}
	return a.Is6() && !globalUnicast6.Contains(a)
}

// registrySamples are, for every row of the registry list, the first, a
// middle and the last address, each with whether it must be refused, and
// the neighbours just outside the row that the list says are global.
func registrySamples() (refused []netip.Addr, global []netip.Addr) {
	seen := map[netip.Addr]bool{}
	add := func(a netip.Addr) {
		if seen[a] {
			return
		}
		seen[a] = true
		if refusedByTable(a) {
			refused = append(refused, a)
		} else {
			global = append(global, a)
		}
	}
	for _, b := range specialBlocks {
		first, mid, last := span(b.prefix)
		for _, a := range []netip.Addr{first, mid, last} {
			add(a)
		}
		if before, ok := addrAdd(first, -1); ok && !refusedByTable(before) {
			add(before)
		}
		if after, ok := addrAdd(last, 1); ok && !refusedByTable(after) {
			add(after)
		}
	}
	return refused, global
}

// TestSpecialPurposeRegistry: generated from the registry list itself —
// every row's first, middle and last address is refused when its
// Globally Reachable is not True (or it lies in a row that is not), and
// the neighbours just outside a row that no other row holds are allowed.
// Carrier rows (IPv4-mapped, NAT64, 6to4) are judged by the IPv4 address
// inside: see TestSpecialPurposeEmbedded.
func TestSpecialPurposeRegistry(t *testing.T) {
	t.Parallel()
	refused, global := registrySamples()
	for _, b := range specialBlocks {
		if b.embeds > 0 {
			for _, o := range specialBlocks {
				if o.embeds == 0 && o.global != reachYes && o.prefix.Overlaps(b.prefix) {
					t.Errorf("the carrier row %s overlaps the refused row %s: SpecialPurpose judges it by its IPv4 address only", b.prefix, o.prefix)
				}
			}
			continue
		}
		first, mid, last := span(b.prefix)
		for _, a := range []netip.Addr{first, mid, last} {
			_, special := SpecialPurpose(a)
			if b.global != reachYes && !special {
				t.Errorf("%s (%s %s, %s) is allowed", a, b.prefix, b.name, b.rfc)
			}
		}
	}
	for _, a := range refused {
		if why, special := SpecialPurpose(a); !special {
			t.Errorf("%s is allowed; the registry list refuses it", a)
		} else if why == "" {
			t.Errorf("%s is refused without a reason", a)
		}
	}
	if len(global) < 20 {
		t.Fatalf("control: only %d global neighbours generated", len(global))
	}
	for _, a := range global {
		if why, special := SpecialPurpose(a); special {
			t.Errorf("control: the global neighbour %s is refused: %s", a, why)
		}
	}
	t.Logf("%d rows: %d addresses refused, %d global neighbours allowed", len(specialBlocks), len(refused), len(global))
}

// TestSpecialPurposeEmbedded: the IPv6 forms of a refused IPv4 address —
// IPv4-mapped, NAT64 (64:ff9b::/96, and all of 64:ff9b:1::/48), 6to4,
// IPv4-compatible, Teredo — are refused; the mapped, NAT64 and 6to4
// forms of a global one are allowed (IPv4-compatible and Teredo forms
// never are).
func TestSpecialPurposeEmbedded(t *testing.T) {
	t.Parallel()
	refused4, global := registrySamples()
	var global4 []netip.Addr
	for _, a := range global {
		if a.Is4() {
			global4 = append(global4, a)
		}
	}
	forms := func(v4 netip.Addr) map[string]netip.Addr {
		b := v4.As4()
		mk := func(prefix [16]byte, at int) netip.Addr {
			copy(prefix[at/8:], b[:])
			return netip.AddrFrom16(prefix)
		}
		return map[string]netip.Addr{
			"mapped":      netip.AddrFrom16(v4.As16()),
			"nat64":       mk([16]byte{0, 0x64, 0xff, 0x9b}, 96),
			"6to4":        mk([16]byte{0x20, 0x02}, 16),
			"compat":      mk([16]byte{}, 96),
			"local nat64": mk([16]byte{0, 0x64, 0xff, 0x9b, 0, 1}, 96),
			"teredo":      mk([16]byte{0x20, 0x01, 0, 0}, 32),
		}
	}
	n := 0
	for _, v4 := range refused4 {
		if !v4.Is4() {
			continue
		}
		for name, a := range forms(v4) {
			n++
			if _, special := SpecialPurpose(a); !special {
				t.Errorf("the %s form %s of refused %s is allowed", name, a, v4)
			}
		}
	}
	if n < 100 {
		t.Fatalf("control: only %d embedded forms tried", n)
	}
	for _, v4 := range global4 {
		for name, a := range forms(v4) {
			_, special := SpecialPurpose(a)
			want := name == "compat" || name == "local nat64" || name == "teredo"
			if special != want {
				t.Errorf("the %s form %s of global %s: refused %v, want %v", name, a, v4, special, want)
			}
		}
	}
}

// TestSpecialPurposeNamed: the addresses of the issue and well-known
// public ones, by hand, not from the list.
func TestSpecialPurposeNamed(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"100.64.0.1", "100.100.100.200", "100.127.255.255", "198.18.0.1", "198.19.255.255", "192.0.0.1", "192.0.0.9", "192.0.0.255",
		"127.0.0.1", "10.1.2.3", "169.254.169.254", "0.0.0.0", "0.1.2.3", "224.0.0.1", "239.255.255.250", "255.255.255.255", "240.0.0.1", "192.0.2.7", "192.88.99.1",
		"::1", "::", "fd00::1", "fe80::1", "fe80::1%eth0", "fec0::1", "ff02::1", "2001:db8::1", "3fff::1", "5f00::1", "100::1", "2001:2::1", "2001::1", "4000::1",
		"::ffff:100.64.0.1", "64:ff9b::a9fe:a9fe", "64:ff9b::6440:1", "64:ff9b:1::808:808", "2002:a9fe:a9fe::1", "::127.0.0.1", "::8.8.8.8", "fd7a:115c:a1e0::1"} {
		if _, special := SpecialPurpose(netip.MustParseAddr(s)); !special {
			t.Errorf("%s is allowed", s)
		}
	}
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "104.18.0.1", "100.63.255.255", "100.128.0.0", "198.17.255.255", "198.20.0.0", "192.0.1.0", "223.255.255.255",
		"2606:4700::1", "2a00:1450:4001::1", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "2001:4860:4860::8888"} {
		if why, special := SpecialPurpose(netip.MustParseAddr(s)); special {
			t.Errorf("control: public %s is refused: %s", s, why)
		}
	}
	if why, _ := SpecialPurpose(netip.MustParseAddr("100.64.0.1")); !strings.Contains(why, "Shared Address Space") || !strings.Contains(why, "RFC 6598") {
		t.Errorf("the reason names no row: %q", why)
	}
}
