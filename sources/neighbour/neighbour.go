package neighbour

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/jocasta/jocasta/sources/internal/netlinkdump"
	"github.com/vishvananda/netlink"
)

// State is the kernel's NUD state of an entry (ndm_state bits).
type State uint16

// NUD states, from linux/neighbour.h.
const (
	Incomplete State = 0x01
	Reachable  State = 0x02
	Stale      State = 0x04
	Delay      State = 0x08
	Probe      State = 0x10
	Failed     State = 0x20
	NoARP      State = 0x40
	Permanent  State = 0x80
)

// PresentStates are the states that prove the address answered ARP or NDP
// recently: REACHABLE, STALE, DELAY, PROBE.
const PresentStates = Reachable | Stale | Delay | Probe

var stateNames = []struct {
	s    State
	name string
}{
	{Incomplete, "INCOMPLETE"}, {Reachable, "REACHABLE"}, {Stale, "STALE"}, {Delay, "DELAY"},
	{Probe, "PROBE"}, {Failed, "FAILED"}, {NoARP, "NOARP"}, {Permanent, "PERMANENT"},
}

func (s State) String() string {
	if s == 0 {
		return "NONE"
	}
	var parts []string
	for _, n := range stateNames {
		if s&n.s != 0 {
			parts = append(parts, n.name)
			s &^= n.s
		}
	}
	if s != 0 {
		parts = append(parts, fmt.Sprintf("%#x", uint16(s)))
	}
	return strings.Join(parts, "|")
}

// Entry is one neighbour table entry.
type Entry struct {
	IP        netip.Addr
	MAC       net.HardwareAddr // nil when the entry has none (INCOMPLETE, FAILED)
	State     State
	LinkIndex int
	// Confirmed is the time since the neighbour last confirmed the entry
	// (ARP/NDP reply or upper-layer confirmation).
	Confirmed time.Duration
}

// userHZ is the unit of the kernel's ndm_confirmed: clock ticks of
// sysconf(_SC_CLK_TCK), which is 100 on every Linux architecture Go runs on.
const userHZ = 100

// List reads the neighbour table (IPv4 and IPv6) of the calling thread's
// network namespace over netlink (RTM_GETNEIGH dump).
func List() ([]Entry, error) {
	ns, err := netlinkdump.Retry(func() ([]netlink.Neigh, error) { return netlink.NeighList(0, netlink.FAMILY_ALL) })
	if err != nil {
		return nil, fmt.Errorf("neighbour: read the neighbour table: %w", err)
	}
	out := make([]Entry, 0, len(ns))
	for _, n := range ns {
		ip, ok := netip.AddrFromSlice(n.IP)
		if !ok {
			continue
		}
		e := Entry{
			IP:        ip.Unmap(),
			State:     State(n.State),
			LinkIndex: n.LinkIndex,
			Confirmed: time.Duration(n.Confirmed) * (time.Second / userHZ),
		}
		if len(n.HardwareAddr) > 0 {
			e.MAC = slices.Clone(n.HardwareAddr)
		}
		out = append(out, e)
	}
	return out, nil
}

// validMAC: a MAC that names a device (not absent, not all zeros).
func validMAC(m net.HardwareAddr) bool {
	for _, b := range m {
		if b != 0 {
			return true
		}
	}
	return false
}

func inAny(a netip.Addr, prefixes []netip.Prefix) bool {
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// rank orders states by how fresh the evidence is, for addresses listed
// on several links.
func rank(s State) int {
	switch {
	case s&Reachable != 0:
		return 5
	case s&Delay != 0:
		return 4
	case s&Probe != 0:
		return 3
	case s&Stale != 0:
		return 2
	case s&Permanent != 0:
		return 1
	}
	return 0
}

// filter keeps, per address inside prefixes, the freshest entry whose
// state has a bit of states and whose MAC is valid; sorted by address.
func filter(entries []Entry, prefixes []netip.Prefix, states State) []Entry {
	best := map[netip.Addr]int{}
	var out []Entry
	for _, e := range entries {
		if e.State&states == 0 || !validMAC(e.MAC) || !inAny(e.IP, prefixes) {
			continue
		}
		if i, ok := best[e.IP]; ok {
			if rank(e.State) > rank(out[i].State) {
				out[i] = e
			}
			continue
		}
		best[e.IP] = len(out)
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return a.IP.Compare(b.IP) })
	return out
}

// Present returns the entries that show a neighbour answered ARP/NDP: state
// REACHABLE, STALE, DELAY or PROBE, with a MAC, inside one of prefixes.
// One entry per address (the freshest when it is listed on several
// links), sorted by address.
//
// PERMANENT and NOARP entries are left out: they are configuration (static
// ARP, multicast or point-to-point mappings), not evidence that anything
// answered. A STALE entry can outlive its host; a sweep probes every
// address, which moves a STALE entry through DELAY and PROBE to FAILED
// within about 8 seconds when nothing answers, so such a ghost lasts at
// most one sweep.
func Present(entries []Entry, prefixes []netip.Prefix) []Entry {
	return filter(entries, prefixes, PresentStates)
}

// Resolved is the set of addresses inside prefixes whose entry shows a
// completed resolution (present states, with a MAC).
func Resolved(entries []Entry, prefixes []netip.Prefix) map[netip.Addr]bool {
	m := map[netip.Addr]bool{}
	for _, e := range filter(entries, prefixes, PresentStates) {
		m[e.IP] = true
	}
	return m
}

// MACs maps each address inside prefixes to its MAC, from entries in a
// present state or PERMANENT (a static entry still names the device's
// MAC).
func MACs(entries []Entry, prefixes []netip.Prefix) map[netip.Addr]net.HardwareAddr {
	es := filter(entries, prefixes, PresentStates|Permanent)
	m := make(map[netip.Addr]net.HardwareAddr, len(es))
	for _, e := range es {
		m[e.IP] = e.MAC
	}
	return m
}
