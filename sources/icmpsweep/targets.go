package icmpsweep

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/jocasta/jocasta/sources/internal/sweeprun"
	"github.com/jocasta/jocasta/sources/internal/sweeptargets"
)

// warnAddresses: a network larger than this gets a size warning.
const warnAddresses = 1 << 16

// target is one network of a sweep: its addresses (package sweeptargets)
// and the only per-address state, one bit saying the address answered.
type target struct {
	sweeptargets.Block
	answered sweeptargets.Bits
	sweeprun.Sends
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
		pr = sweeptargets.Unmap(pr)
		if seen[pr] {
			continue
		}
		seen[pr] = true
		hostBits := sweeptargets.HostBits(pr)
		if hostBits > sweeptargets.MaxHostBits {
			return nil, nil, fmt.Errorf("%w: network %v has 2^%d addresses; the most one sweep covers is a /8 (IPv4) or a /104 (IPv6)",
				ErrPrefixTooLarge, orig, hostBits)
		}
		t := &target{Block: sweeptargets.NewBlock(pr)}
		switch {
		case !t.V6() && pr.Bits() < 31:
			t.First, t.End = 1, t.End-1
		case t.V6() && pr.Bits() < 127:
			t.First = 1
		}
		t.answered = sweeptargets.NewBits(sweeptargets.Size(pr))
		ts = append(ts, t)
	}
	// Most specific first: an address in two networks is probed once and
	// recorded under the most specific one.
	sweeptargets.Nest(ts, func(t *target) *sweeptargets.Block { return &t.Block })
	var warnings []string
	for _, t := range ts {
		if n := t.Count(); n > warnAddresses {
			warnings = append(warnings, fmt.Sprintf("network %v has %d addresses; at %d probes/s a sweep takes %s",
				t.Prefix, n, p.Rate, shortDuration(Estimate(n, p))))
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
