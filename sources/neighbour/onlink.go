package neighbour

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/jocasta/jocasta/sources/internal/netlinkdump"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// OnLink returns the prefixes whose addresses the kernel resolves through
// the neighbour table: the main table's routes without a gateway
// (connected networks) on interfaces that use ARP/NDP, in the calling
// thread's network namespace. Loopback, point-to-point and NOARP links
// (tun, WireGuard) are left out: their addresses never get an entry.
func OnLink() ([]netip.Prefix, error) {
	routes, err := netlinkdump.Retry(func() ([]netlink.Route, error) { return netlink.RouteList(nil, netlink.FAMILY_ALL) })
	if err != nil {
		return nil, fmt.Errorf("neighbour: read the routing table: %w", err)
	}
	usesARP := map[int]bool{}
	var out []netip.Prefix
	for _, r := range routes {
		if r.Dst == nil || r.Gw != nil || len(r.MultiPath) > 0 || r.Type != 1 /* RTN_UNICAST */ {
			continue
		}
		p, ok := netip.AddrFromSlice(r.Dst.IP)
		if !ok {
			continue
		}
		ones, _ := r.Dst.Mask.Size()
		pr := netip.PrefixFrom(p.Unmap(), ones)
		if p.Is4In6() {
			pr = netip.PrefixFrom(p.Unmap(), ones-96)
		}
		if !pr.IsValid() || pr.Bits() == 0 || pr.Addr().IsMulticast() || pr.Addr().IsLinkLocalUnicast() {
			continue
		}
		arp, seen := usesARP[r.LinkIndex]
		if !seen {
			link, err := netlink.LinkByIndex(r.LinkIndex)
			if err == nil {
				a := link.Attrs()
				arp = a.RawFlags&unix.IFF_NOARP == 0 && len(a.HardwareAddr) > 0 && a.Flags&(net.FlagLoopback|net.FlagPointToPoint) == 0
			}
			usesARP[r.LinkIndex] = arp
		}
		if arp {
			out = append(out, pr.Masked())
		}
	}
	return out, nil
}
