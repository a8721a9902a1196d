package arpsweep

import (
	"fmt"
	"net/netip"

	"github.com/jocasta/jocasta/sources/internal/sweeprun"
	"github.com/jocasta/jocasta/sources/internal/sweeptargets"
)

// target is one prefix of a sweep: its addresses (package sweeptargets)
// and two bits per address: a request was sent ("asked"), a valid reply
// came ("answered"). The subnet's network and broadcast addresses are not
// hosts (for subnets shorter than /31) and are left out of the block's
// [First, End); they can only be its first and last address, since the
// prefix lies inside the subnet.
type target struct {
	sweeptargets.Block
	link     Link
	conn     transport
	src      netip.Addr // sender IP of the requests; replies must be to it
	srcIP    [4]byte
	srcMAC   [6]byte
	asked    sweeptargets.Bits
	answered sweeptargets.Bits
	sweeprun.Sends
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
		p = sweeptargets.Unmap(p)
		if !p.Addr().Is4() {
			return nil, fmt.Errorf("%w: %v is not IPv4 (ARP is IPv4 only)", ErrBadTarget, tg.Prefix)
		}
		if hb := sweeptargets.HostBits(p); hb > sweeptargets.MaxHostBits {
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
		size := sweeptargets.Size(p)
		t := &target{
			Block:    sweeptargets.NewBlock(p),
			link:     tg.Link,
			conn:     c,
			src:      src.Addr(),
			srcIP:    src.Addr().As4(),
			srcMAC:   [6]byte(tg.Link.MAC),
			asked:    sweeptargets.NewBits(size),
			answered: sweeptargets.NewBits(size),
		}
		if src.Bits() < 31 {
			// Leave out the subnet's network and broadcast addresses
			// where they are the prefix's first or last.
			sn := sweeptargets.NewBlock(src.Masked())
			o, _ := sn.Offset(p.Addr())
			if o == 0 {
				t.First = 1
			}
			if uint64(o)+size == sweeptargets.Size(sn.Prefix) {
				t.End--
			}
		}
		ts = append(ts, t)
	}
	sweeptargets.Nest(ts, func(t *target) *sweeptargets.Block { return &t.Block })
	return ts, nil
}
