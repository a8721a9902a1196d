package config

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
)

// LocalIPv4Prefixes returns the IPv4 prefixes of this host's interfaces that
// are up and not loopback, masked to their network ("192.168.1.0/24"),
// sorted and without duplicates, for the networks of `jocasta init`.
// Link-local addresses (169.254.0.0/16) are left out: they are not a network
// anyone wants swept.
func LocalIPv4Prefixes() ([]netip.Prefix, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("config: list interfaces: %w", err)
	}
	var all []ifaceAddrs
	for _, ifc := range ifaces {
		addrs, err := ifc.Addrs()
		if err != nil {
			return nil, fmt.Errorf("config: addresses of %s: %w", ifc.Name, err)
		}
		all = append(all, ifaceAddrs{flags: ifc.Flags, addrs: addrs})
	}
	return ipv4Prefixes(all), nil
}

type ifaceAddrs struct {
	flags net.Flags
	addrs []net.Addr
}

// ipv4Prefixes is the pure part of LocalIPv4Prefixes.
func ipv4Prefixes(ifaces []ifaceAddrs) []netip.Prefix {
	var out []netip.Prefix
	for _, ifc := range ifaces {
		if ifc.flags&net.FlagUp == 0 || ifc.flags&net.FlagLoopback != 0 {
			continue
		}
		for _, a := range ifc.addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			addr, ok := netip.AddrFromSlice(ipn.IP)
			if !ok {
				continue
			}
			addr = addr.Unmap()
			ones, bits := ipn.Mask.Size()
			if !addr.Is4() || bits == 0 || addr.IsLoopback() || addr.IsLinkLocalUnicast() {
				continue
			}
			if bits == 128 { // a 16-byte mask on an IPv4 address
				ones -= 96
			}
			if ones < 0 || ones > 32 {
				continue
			}
			out = append(out, netip.PrefixFrom(addr, ones).Masked())
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return slices.Compact(out)
}
