// Package onlink knows the local interfaces' prefixes: which interface
// reaches an address, and whether a reply's source is on a local link
// (mDNS, DNS-SD and SSDP accept only on-link replies, RFC 6762 §11).
package onlink

import (
	"fmt"
	"net"
	"net/netip"
)

// Link is one local interface prefix.
type Link struct {
	Prefix    netip.Prefix
	Interface net.Interface
}

// Links are the prefixes of the local interfaces that are up.
type Links []Link

// Local reads the interfaces that are up and their prefixes.
func Local() (Links, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("onlink: list interfaces: %w", err)
	}
	var out Links
	for _, ifi := range ifs {
		if ifi.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, err := ifi.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			addr, ok := netip.AddrFromSlice(ipn.IP)
			if !ok {
				continue
			}
			ones, _ := ipn.Mask.Size()
			out = append(out, Link{netip.PrefixFrom(addr.Unmap(), ones).Masked(), ifi})
		}
	}
	return out, nil
}

// Find returns the interface whose prefix holds ip.
func (ls Links) Find(ip netip.Addr) (net.Interface, bool) {
	ip = ip.Unmap()
	for _, l := range ls {
		if l.Prefix.Contains(ip.WithZone("")) {
			if ip.Zone() != "" && ip.Zone() != l.Interface.Name {
				continue
			}
			return l.Interface, true
		}
	}
	return net.Interface{}, false
}

// OnLink reports whether a reply from ip may be trusted: an address in a
// local prefix, or an IPv6 link-local address.
func (ls Links) OnLink(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.Is6() && ip.IsLinkLocalUnicast() {
		return true
	}
	_, ok := ls.Find(ip)
	return ok
}
