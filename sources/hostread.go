package sources

import (
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// Name sources a host read gives names under (see the inventory's name
// precedence): a DHCP lease's host name, and a name the router itself
// holds for the host (a static lease's comment, a host hint, a neighbour
// protocol's identity).
const (
	NameDHCP   = "dhcp"
	NameRouter = "router"
)

// HostRead is one read of a peer's host tables: a router's DHCP leases
// and neighbours, a switch's bridge hosts, an access point's wireless
// clients. Rows of every table are merged by MAC into Hosts, so a host
// is one entry whatever number of tables listed it; rows without a MAC
// (failed or incomplete neighbour entries) make no host.
type HostRead struct {
	ScanID   string
	Started  time.Time
	Finished time.Time
	// Complete is false when a table could not be read (a refused call, a
	// reply cut short): the hosts read are facts, the hosts missing are
	// not evidence of anything.
	Complete bool
	Errors   []string
	// Rows counts the table rows read, before merging.
	Rows  int
	Peer  Peer
	Hosts []*ReadHost
}

// Scan implements Result.
func (r *HostRead) Scan() ScanInfo {
	return ScanInfo{ID: r.ScanID, Started: r.Started, Finished: r.Finished, Complete: r.Complete, Errors: r.Errors}
}

// Peer is what a read says about the device read itself.
type Peer struct {
	// Name is its own name (RouterOS identity, OpenWrt host name).
	Name string
	// Model is its board or model, as it says.
	Model string
	// MACs are its own interfaces' addresses (bridge-local entries,
	// interface list), sorted, so the inventory can find it.
	MACs []string
	// Outside is its outside address: the IPv4 address it holds on the
	// interface of its default route (canonical form), "" when it has
	// none or it could not be read. It is where location.country comes
	// from when that is empty (behind carrier-grade NAT it is a shared
	// address and says no country).
	Outside string
}

// ReadHost is one host of a HostRead.
type ReadHost struct {
	// MAC in lower-case colon form.
	MAC string
	// IPs the peer holds for the host (leases, neighbour entries).
	IPs []netip.Addr
	// Names by name source (NameDHCP, NameRouter).
	Names map[string]string
	// Seen says the peer saw the host at the time of the read (a complete
	// neighbour entry, a bridge host entry, a wireless association, a
	// lease renewed within the last minutes): the host is present. A host
	// listed only by an old lease is known, not seen.
	Seen bool
	// Port is the bridge or switch port the host's frames arrive on, or
	// the wireless interface it is associated with.
	Port string
	// SSID and Band of its wireless association, when it has one.
	SSID string
	Band string
	// Signal strength in dBm of its wireless association, 0 when unknown.
	Signal int
}

// HostSet merges the rows of a peer's tables into hosts by MAC.
type HostSet struct {
	byMAC map[string]*ReadHost
	order []string
}

// NormalizeMAC returns s as a lower-case colon-form 6-byte MAC, or ""
// when it is not one or is all zeros or broadcast (what neighbour tables
// show for incomplete entries).
func NormalizeMAC(s string) string {
	hw, err := net.ParseMAC(strings.TrimSpace(s))
	if err != nil || len(hw) != 6 {
		return ""
	}
	zero, ones := true, true
	for _, b := range hw {
		zero = zero && b == 0
		ones = ones && b == 0xff
	}
	if zero || ones {
		return ""
	}
	return hw.String()
}

// Host returns the host of mac, adding it when new; nil when mac is not
// a usable MAC (see NormalizeMAC).
func (s *HostSet) Host(mac string) *ReadHost {
	m := NormalizeMAC(mac)
	if m == "" {
		return nil
	}
	if s.byMAC == nil {
		s.byMAC = make(map[string]*ReadHost)
	}
	h := s.byMAC[m]
	if h == nil {
		h = &ReadHost{MAC: m}
		s.byMAC[m] = h
		s.order = append(s.order, m)
	}
	return h
}

// Len is the number of hosts.
func (s *HostSet) Len() int { return len(s.order) }

// Hosts returns the hosts sorted by MAC, each with its addresses sorted
// and deduplicated.
func (s *HostSet) Hosts() []*ReadHost {
	out := make([]*ReadHost, 0, len(s.order))
	for _, m := range s.order {
		h := s.byMAC[m]
		slices.SortFunc(h.IPs, func(a, b netip.Addr) int { return a.Compare(b) })
		h.IPs = slices.Compact(h.IPs)
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b *ReadHost) int { return strings.Compare(a.MAC, b.MAC) })
	return out
}

// AddIP adds ip to the host's addresses when it is a usable unicast
// address (not unspecified, loopback, multicast or link-local IPv6, which
// neighbour tables list for every host and say nothing about it).
func (h *ReadHost) AddIP(ip netip.Addr) {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsUnspecified() || ip.IsLoopback() || ip.IsMulticast() || ip.IsLinkLocalUnicast() {
		return
	}
	h.IPs = append(h.IPs, ip)
}

// SetName sets the host's name from src, when name is a plausible host
// name (not empty, not "*" as dnsmasq writes for none).
func (h *ReadHost) SetName(src, name string) {
	name = strings.TrimSpace(name)
	if name == "" || name == "*" || len(name) > 253 {
		return
	}
	if h.Names == nil {
		h.Names = make(map[string]string, 1)
	}
	h.Names[src] = name
}

// OutsideIPv4 returns s, with any prefix length cut off ("203.0.113.7/24"),
// as a canonical IPv4 address for Peer.Outside; "" when it is not one an
// interface can hold (unparsable, IPv6, unspecified, loopback, multicast,
// broadcast).
func OutsideIPv4(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s = s[:i]
	}
	ip, err := netip.ParseAddr(s)
	if err != nil || !ip.Is4() || ip.IsUnspecified() || ip.IsLoopback() || ip.IsMulticast() || ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return ""
	}
	return ip.String()
}
