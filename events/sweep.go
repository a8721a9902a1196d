package events

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// Kinds of observation events.
const (
	// KindSweepCompleted records one whole device sweep: every responder
	// with its MAC, round-trip time and names. One event per sweep.
	KindSweepCompleted = "sweep.completed"
	// KindPortScanCompleted records one whole TCP port scan.
	KindPortScanCompleted = "portscan.completed"
	// KindScanFailed records a run of a source that produced nothing (a
	// socket it could not open, a peer that refused it), with the reason.
	// It is never evidence that a device is gone.
	KindScanFailed = "scan.failed"
)

// ScanFailed is the payload of scan.failed.
type ScanFailed struct {
	ScanID   string    `json:"scan_id"`
	Kind     string    `json:"kind"` // the source kind: "sweep", "portscan", "routerapi", ...
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Reason   string    `json:"reason"`
}

// SweepCompleted is the payload of sweep.completed.
type SweepCompleted struct {
	ScanID   string    `json:"scan_id"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Networks are the CIDR prefixes the sweep covered.
	Networks []string `json:"networks"`
	// ProbesSent counts probes really sent: ICMP echo requests, plus the
	// sweep's own ARP requests on on-link IPv4 networks.
	ProbesSent int `json:"probes_sent"`
	// Complete is false when the sweep failed or was cut short; an
	// incomplete sweep is never evidence that a device is gone.
	Complete bool     `json:"complete"`
	Errors   []string `json:"errors,omitempty"`
	// Base, when not 0, is the seq of the same source's previous sweep,
	// and Same lists the responders that answered exactly as they did in
	// it (same address, network, MAC, how, names, services, UPnP) as
	// pairs of numbers: the host's index in that sweep's responders, then
	// this round trip in microseconds. Hosts holds the others, whole. The
	// sweep's responders are both together, in address order: a stable
	// network costs a few bytes per host and sweep instead of a whole
	// record (v2; a v1 sweep has only Hosts).
	Base  uint64      `json:"base,omitempty"`
	Same  []int64     `json:"same,omitempty"`
	Hosts []SweepHost `json:"hosts"`
}

// SweepHost is one responder of a sweep.
type SweepHost struct {
	IP string `json:"ip"`
	// Network is the configured prefix containing IP.
	Network string `json:"network,omitempty"`
	// MAC in lower-case colon form, empty when unknown (off-link).
	MAC string `json:"mac,omitempty"`
	// RTTMicros is the best ICMP round trip; 0 when only ARP/NDP answered.
	RTTMicros int64 `json:"rtt_us,omitempty"`
	// Via says how the host was found: "icmp", "arp" or "neighbour".
	Via string `json:"via"`
	// Names are the host's names by resolver (dns, mdns, netbios, dnssd,
	// ssdp); in JSON an object from resolver to name.
	Names Names `json:"names,omitempty"`
	// Services are DNS-SD services the host advertises.
	Services []Service `json:"services,omitempty"`
	// UPnP is what the host's SSDP description says, if anything.
	UPnP *UPnP `json:"upnp,omitempty"`
}

// Service is one advertised DNS-SD service instance.
type Service struct {
	Instance string `json:"instance"`
	Type     string `json:"type"` // such as "_http._tcp"
	Port     uint16 `json:"port"`
}

// UPnP is a device description read over SSDP.
type UPnP struct {
	FriendlyName string `json:"friendly_name,omitempty"`
	Manufacturer string `json:"manufacturer,omitempty"`
	ModelName    string `json:"model_name,omitempty"`
}

// PortScanCompleted is the payload of portscan.completed.
type PortScanCompleted struct {
	ScanID   string    `json:"scan_id"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Ports is the list of ports probed on every target, in ranges
	// ("22,80,8000-8100"), before per-device advertised ports.
	Ports      string   `json:"ports"`
	Targets    int      `json:"targets"`
	ProbesSent int      `json:"probes_sent"`
	Complete   bool     `json:"complete"`
	Errors     []string `json:"errors,omitempty"`
	// Results lists every target address probed, with its open ports
	// (empty when none were open). An address missing here was not probed.
	Results []PortResult `json:"results"`
}

// PortResult is the open TCP ports of one address.
type PortResult struct {
	IP   string   `json:"ip"`
	Open []uint16 `json:"open"`
}

// sameShape upcasts a payload whose new version only added optional
// fields: the bytes read as they are.
func sameShape(p json.RawMessage) (json.RawMessage, error) { return p, nil }

// ResolveSweep returns the responders of a v2 sweep: the hosts of Same,
// taken from base (the responders of the source's sweep at seq Base) with
// their new round trips, and Hosts, in address order. A reference outside
// base is an error (the base is not the one the sweep was written
// against). A sweep with Base 0 is its Hosts.
func ResolveSweep(p *SweepCompleted, base []SweepHost) ([]SweepHost, error) {
	if p.Base == 0 {
		return p.Hosts, nil
	}
	if len(p.Same)%2 != 0 {
		return nil, fmt.Errorf("sweep %s: same has an odd number of entries", p.ScanID)
	}
	out := make([]SweepHost, 0, len(p.Same)/2+len(p.Hosts))
	for i := 0; i < len(p.Same); i += 2 {
		idx, rtt := p.Same[i], p.Same[i+1]
		if idx < 0 || idx >= int64(len(base)) {
			return nil, fmt.Errorf("sweep %s: responder %d of seq %d, which has %d", p.ScanID, idx, p.Base, len(base))
		}
		h := base[idx]
		h.RTTMicros = rtt
		out = append(out, h)
	}
	out = append(out, p.Hosts...)
	SortSweepHosts(out)
	return out, nil
}

// SortSweepHosts orders responders by address (an address that does not
// parse sorts after the others, by its text).
func SortSweepHosts(hs []SweepHost) {
	slices.SortStableFunc(hs, func(a, b SweepHost) int {
		x, errA := netip.ParseAddr(a.IP)
		y, errB := netip.ParseAddr(b.IP)
		switch {
		case errA == nil && errB == nil:
			return x.Compare(y)
		case errA == nil:
			return -1
		case errB == nil:
			return 1
		}
		return strings.Compare(a.IP, b.IP)
	})
}

// SameResponder reports whether b answered as a did, round trip aside.
func SameResponder(a, b *SweepHost) bool {
	if a.IP != b.IP || a.Network != b.Network || a.MAC != b.MAC || a.Via != b.Via ||
		!slices.Equal(a.Names, b.Names) || !slices.Equal(a.Services, b.Services) {
		return false
	}
	switch {
	case a.UPnP == nil || b.UPnP == nil:
		return a.UPnP == b.UPnP
	}
	return *a.UPnP == *b.UPnP
}
