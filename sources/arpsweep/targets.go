package arpsweep

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"sync/atomic"
)

// maxHostBits bounds a swept network: 2^24 addresses (an IPv4 /8).
const maxHostBits = 24

// target is one prefix of a sweep. Its addresses are never listed: they
// are base + offset for offset in [0, size), and the per-address state is
// two bits: a request was sent ("asked"), a valid reply came ("answered").
type target struct {
	prefix netip.Prefix
	link   Link
	conn   transport
	src    netip.Addr // sender IP of the requests; replies must be to it
	srcIP  [4]byte
	srcMAC [6]byte
	base   uint32
	size   uint32
	// The subnet's network and broadcast addresses are not hosts (for
	// subnets shorter than /31) and are never asked.
	subnetNet, subnetBcast uint32
	hasNetBcast            bool
	// inner lists earlier (more specific) targets inside this one, whose
	// addresses this target skips so no address is asked twice.
	inner    []*target
	asked    []atomic.Uint64
	answered []atomic.Uint64

	// send failures (sender goroutine only)
	sent      int
	failed    int
	firstErr  error
	abandoned bool
}

func u32(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func addrOf(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

func (t *target) addr(off uint32) netip.Addr { return addrOf(t.base + off) }

// offset is the offset of a inside the prefix; ok is false outside it.
func (t *target) offset(a netip.Addr) (uint32, bool) {
	if !a.Is4() || !t.prefix.Contains(a) {
		return 0, false
	}
	return u32(a) - t.base, true
}

// skip reports whether off is never asked through this target: the
// subnet's network or broadcast address, or an address of a more specific
// target.
func (t *target) skip(off uint32) bool {
	v := t.base + off
	if t.hasNetBcast && (v == t.subnetNet || v == t.subnetBcast) {
		return true
	}
	if len(t.inner) == 0 {
		return false
	}
	a := addrOf(v)
	for _, in := range t.inner {
		if o, ok := in.offset(a); ok && !in.skip(o) {
			return true
		}
	}
	return false
}

func bit(set []atomic.Uint64, off uint32) bool { return set[off/64].Load()&(1<<(off%64)) != 0 }

// setBit sets the bit and reports whether it was clear before.
func setBit(set []atomic.Uint64, off uint32) bool {
	b := uint64(1) << (off % 64)
	return set[off/64].Or(b)&b == 0
}

// plan checks the targets and turns them into per-prefix state, most
// specific first, duplicates removed.
func plan(targets []Target, conns map[int]transport) ([]*target, error) {
	seen := map[netip.Prefix]bool{}
	var ts []*target
	for _, tg := range targets {
		p := tg.Prefix
		if !p.IsValid() {
			return nil, fmt.Errorf("%w: invalid prefix %v", ErrBadTarget, p)
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		p = p.Masked()
		if !p.Addr().Is4() {
			return nil, fmt.Errorf("%w: %v is not IPv4 (ARP is IPv4 only)", ErrBadTarget, tg.Prefix)
		}
		if hb := 32 - p.Bits(); hb > maxHostBits {
			return nil, fmt.Errorf("%w: network %v has 2^%d addresses; the most one sweep covers is a /8", ErrPrefixTooLarge, tg.Prefix, hb)
		}
		src := tg.Source
		if !src.IsValid() || !src.Addr().Is4() || src.Bits() >= 32 || src.Bits() > p.Bits() || !src.Masked().Contains(p.Addr()) {
			return nil, fmt.Errorf("%w: %v is not inside the subnet of the source address %v", ErrBadTarget, p, src)
		}
		if len(tg.Link.MAC) != 6 {
			return nil, fmt.Errorf("%w: %v: interface %q has no 48-bit MAC", ErrBadTarget, p, tg.Link.Name)
		}
		c, ok := conns[tg.Link.Index]
		if !ok {
			return nil, fmt.Errorf("%w: %v: interface %q (index %d) was not opened", ErrBadTarget, p, tg.Link.Name, tg.Link.Index)
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		size := uint64(1) << (32 - p.Bits())
		t := &target{
			prefix:   p,
			link:     tg.Link,
			conn:     c,
			src:      src.Addr(),
			srcIP:    src.Addr().As4(),
			srcMAC:   [6]byte(tg.Link.MAC),
			base:     u32(p.Addr()),
			size:     uint32(size),
			asked:    make([]atomic.Uint64, (size+63)/64),
			answered: make([]atomic.Uint64, (size+63)/64),
		}
		if src.Bits() < 31 {
			sn := src.Masked()
			t.hasNetBcast = true
			t.subnetNet = u32(sn.Addr())
			t.subnetBcast = t.subnetNet | (1<<(32-sn.Bits()) - 1)
		}
		ts = append(ts, t)
	}
	slices.SortStableFunc(ts, func(a, b *target) int {
		if c := cmp.Compare(b.prefix.Bits(), a.prefix.Bits()); c != 0 {
			return c
		}
		return a.prefix.Addr().Compare(b.prefix.Addr())
	})
	for i, t := range ts {
		for _, in := range ts[:i] {
			if t.prefix.Overlaps(in.prefix) {
				t.inner = append(t.inner, in)
			}
		}
	}
	return ts, nil
}
