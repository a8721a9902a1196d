package mdns

import (
	"fmt"
	"net"
	"net/netip"
)

// link is one local interface prefix.
type link struct {
	prefix netip.Prefix
	ifi    net.Interface
}

// links are the prefixes of the local interfaces that are up.
type links []link

// localLinks reads the interfaces that are up and their prefixes.
func localLinks() (links, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("mdns: list interfaces: %w", err)
	}
	var out links
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
			out = append(out, link{netip.PrefixFrom(addr.Unmap(), ones).Masked(), ifi})
		}
	}
	return out, nil
}

// find returns the interface whose prefix holds ip.
func (ls links) find(ip netip.Addr) (net.Interface, bool) {
	ip = ip.Unmap()
	for _, l := range ls {
		if l.prefix.Contains(ip.WithZone("")) {
			if ip.Zone() != "" && ip.Zone() != l.ifi.Name {
				continue
			}
			return l.ifi, true
		}
	}
	return net.Interface{}, false
}

// onLink reports whether a reply from ip may be trusted: an address in a
// local prefix, or an IPv6 link-local address.
func (ls links) onLink(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.Is6() && ip.IsLinkLocalUnicast() {
		return true
	}
	_, ok := ls.find(ip)
	return ok
}
