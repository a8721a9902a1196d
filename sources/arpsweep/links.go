package arpsweep

import (
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/jocasta/jocasta/sources/internal/netlinkdump"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Link is a local interface that resolves IPv4 addresses with ARP.
type Link struct {
	Index int
	Name  string
	// MAC is the interface's 48-bit hardware address: the source of the
	// requests.
	MAC net.HardwareAddr
	// Addrs are the interface's IPv4 addresses with their subnet lengths
	// (10.77.0.2/22).
	Addrs []netip.Prefix
}

// Target is one prefix swept through one link.
type Target struct {
	// Prefix is the IPv4 prefix swept.
	Prefix netip.Prefix
	Link   Link
	// Source is the link's address the requests come from (their sender
	// IP); its subnet holds Prefix.
	Source netip.Prefix
}

// Links lists the interfaces of the calling thread's network namespace
// that are up and use ARP (a 48-bit MAC; not loopback, point-to-point or
// NOARP such as tun or WireGuard), with their IPv4 addresses.
func Links() ([]Link, error) {
	ls, err := netlinkdump.Retry(netlink.LinkList)
	if err != nil {
		return nil, fmt.Errorf("arpsweep: list interfaces: %w", err)
	}
	var out []Link
	for _, l := range ls {
		a := l.Attrs()
		if a.Flags&net.FlagUp == 0 || a.Flags&(net.FlagLoopback|net.FlagPointToPoint) != 0 ||
			a.RawFlags&unix.IFF_NOARP != 0 || len(a.HardwareAddr) != 6 || !unicastMAC(a.HardwareAddr) ||
			a.OperState == netlink.OperDown || a.OperState == netlink.OperLowerLayerDown {
			continue
		}
		addrs, err := netlinkdump.Retry(func() ([]netlink.Addr, error) { return netlink.AddrList(l, netlink.FAMILY_V4) })
		if err != nil {
			return nil, fmt.Errorf("arpsweep: addresses of %s: %w", a.Name, err)
		}
		link := Link{Index: a.Index, Name: a.Name, MAC: slices.Clone(a.HardwareAddr)}
		for _, ad := range addrs {
			if ad.IPNet == nil {
				continue
			}
			ip, ok := netip.AddrFromSlice(ad.IP)
			if !ok {
				continue
			}
			ones, bits := ad.Mask.Size()
			ip = ip.Unmap()
			if bits != 32 || !ip.Is4() {
				continue
			}
			link.Addrs = append(link.Addrs, netip.PrefixFrom(ip, ones))
		}
		if len(link.Addrs) > 0 {
			out = append(out, link)
		}
	}
	return out, nil
}

// TargetFor returns the target that sweeps p through one of links: the
// first link with an address whose subnet holds all of p. A prefix only
// partly on a link, IPv6, or reachable only through a router has none.
func TargetFor(links []Link, p netip.Prefix) (Target, bool) {
	p = p.Masked()
	if !p.Addr().Is4() {
		return Target{}, false
	}
	for _, l := range links {
		for _, a := range l.Addrs {
			// A /31 is a two-address subnet (RFC 3021); a /32 has no
			// neighbours.
			if a.Bits() < 32 && a.Bits() <= p.Bits() && a.Masked().Contains(p.Addr()) {
				return Target{Prefix: p, Link: l, Source: a}, true
			}
		}
	}
	return Target{}, false
}
