package icmpsweep

import (
	"cmp"
	"fmt"
	"math/bits"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"
)

// maxHostBits bounds a swept network: 2^24 addresses (an IPv4 /8).
const maxHostBits = 24

// warnAddresses: a network larger than this gets a size warning.
const warnAddresses = 1 << 16

// target is one network of a sweep. Its addresses are never listed: they
// are base + offset for offset in [first, last], and the only per-address
// state is one bit saying the address answered.
type target struct {
	prefix   netip.Prefix
	v6       bool
	base     [16]byte // network address (IPv4 in the last 4 bytes)
	first    uint32   // first offset probed
	last     uint32   // last offset probed
	answered []atomic.Uint64
	// inner lists earlier (more specific) targets inside this one, whose
	// addresses this target skips so no address is probed twice.
	inner []*target

	// send failures (sender goroutine only)
	sent      int
	failed    int
	firstErr  error
	abandoned bool
}

// count is the number of addresses probed in the network (before
// overlaps are removed).
func (t *target) count() uint64 { return uint64(t.last-t.first) + 1 }

// addr is the address at offset off.
func (t *target) addr(off uint32) netip.Addr {
	b := t.base
	v := uint32(b[12])<<24 | uint32(b[13])<<16 | uint32(b[14])<<8 | uint32(b[15])
	v += off
	b[12], b[13], b[14], b[15] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	if t.v6 {
		return netip.AddrFrom16(b)
	}
	return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
}

// offset is the offset of a inside the network; ok is false outside it.
func (t *target) offset(a netip.Addr) (uint32, bool) {
	if !t.prefix.Contains(a) {
		return 0, false
	}
	b := a.As16()
	if !t.v6 {
		b4 := a.As4()
		copy(b[12:], b4[:])
	}
	v := uint32(b[12])<<24 | uint32(b[13])<<16 | uint32(b[14])<<8 | uint32(b[15])
	base := uint32(t.base[12])<<24 | uint32(t.base[13])<<16 | uint32(t.base[14])<<8 | uint32(t.base[15])
	return v - base, true
}

func (t *target) isAnswered(off uint32) bool {
	return t.answered[off/64].Load()&(1<<(off%64)) != 0
}

// markAnswered sets the bit and reports whether it was clear before.
func (t *target) markAnswered(off uint32) bool {
	bit := uint64(1) << (off % 64)
	return t.answered[off/64].Or(bit)&bit == 0
}

// skip reports whether off is probed by a more specific network of the
// sweep instead (that network's own network and broadcast addresses stay
// with this one).
func (t *target) skip(off uint32) bool {
	if len(t.inner) == 0 {
		return false
	}
	a := t.addr(off)
	for _, in := range t.inner {
		if o, ok := in.offset(a); ok && o >= in.first && o <= in.last {
			return true
		}
	}
	return false
}

// plan turns the configured prefixes into targets, most specific first,
// with duplicates removed and IPv4-mapped IPv6 prefixes unmapped. It
// returns warnings for networks over 2^16 addresses.
//
// Skip rules: for IPv4 prefixes shorter than /31 the network and broadcast
// addresses are not probed; a /31 (RFC 3021) and a /32 probe every
// address. For IPv6 prefixes shorter than /127 the subnet-router anycast
// address (offset 0) is not probed; it would only duplicate a router.
func plan(prefixes []netip.Prefix, p Params) ([]*target, []string, error) {
	seen := map[netip.Prefix]bool{}
	var ts []*target
	for _, pr := range prefixes {
		orig := pr
		if !pr.IsValid() {
			return nil, nil, fmt.Errorf("%w: invalid prefix %v", ErrBadParams, pr)
		}
		if pr.Addr().Is4In6() && pr.Bits() >= 96 {
			pr = netip.PrefixFrom(pr.Addr().Unmap(), pr.Bits()-96)
		}
		pr = pr.Masked()
		if seen[pr] {
			continue
		}
		seen[pr] = true
		hostBits := pr.Addr().BitLen() - pr.Bits()
		if hostBits > maxHostBits {
			return nil, nil, fmt.Errorf("%w: network %v has 2^%d addresses; the most one sweep covers is a /8 (IPv4) or a /104 (IPv6)",
				ErrPrefixTooLarge, orig, hostBits)
		}
		t := &target{prefix: pr, v6: pr.Addr().Is6()}
		if t.v6 {
			t.base = pr.Addr().As16()
		} else {
			b := pr.Addr().As4()
			copy(t.base[12:], b[:])
		}
		size := uint64(1) << hostBits
		t.first, t.last = 0, uint32(size-1)
		switch {
		case !t.v6 && pr.Bits() < 31:
			t.first, t.last = 1, uint32(size-2)
		case t.v6 && pr.Bits() < 127:
			t.first = 1
		}
		t.answered = make([]atomic.Uint64, (size+63)/64)
		ts = append(ts, t)
	}
	// Most specific first: an address in two networks is probed once and
	// recorded under the most specific one.
	slices.SortStableFunc(ts, func(a, b *target) int {
		if c := cmp.Compare(b.prefix.Bits()-b.prefix.Addr().BitLen(), a.prefix.Bits()-a.prefix.Addr().BitLen()); c != 0 {
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
	var warnings []string
	for _, t := range ts {
		if n := t.count(); n > warnAddresses {
			warnings = append(warnings, fmt.Sprintf("network %v has %d addresses; at %d probes/s a sweep takes %s",
				t.prefix, n, p.Rate, shortDuration(Estimate(n, p))))
		}
	}
	return ts, warnings, nil
}

// Estimate is the shortest time a sweep of n addresses can take when the
// rate is the limit: every address probed Rounds times at Rate per second,
// then Wait.
func Estimate(n uint64, p Params) time.Duration {
	if p.Rate <= 0 {
		return 0
	}
	probes := n * uint64(max(p.Rounds, 1))
	return time.Duration(float64(probes)/float64(p.Rate)*float64(time.Second)) + p.Wait
}

// shortDuration prints 9h19m rather than 9h19m14.214s.
func shortDuration(d time.Duration) string {
	switch {
	case d >= time.Hour:
		d = d.Round(time.Minute)
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return d.Round(time.Millisecond).String()
	}
}

// burstFor returns the pacing steps for a rate: the sender takes batch
// tokens at a time (about 4ms of probes, 1 to 64), so it sleeps in steps a
// timer keeps; the bucket holds up to burst tokens (up to four batches,
// at most 2% of a second's probes), so a timer that fires late is made up
// for without ever sending more than rate + burst probes in a second.
func burstFor(rate int) (batch, burst int) {
	batch = min(max(rate/250, 1), 64)
	burst = max(batch, min(4*batch, rate/50))
	return batch, burst
}

// ones counts set bits (used by tests and the summary).
func (t *target) ones() int {
	n := 0
	for i := range t.answered {
		n += bits.OnesCount64(t.answered[i].Load())
	}
	return n
}

// Check validates prefixes and params the way [Pinger.Sweep] does, without
// a socket: a configuration check at startup. It returns the size warnings
// a sweep would give.
func Check(prefixes []netip.Prefix, p Params) (warnings []string, err error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	_, warnings, err = plan(prefixes, p)
	return warnings, err
}
