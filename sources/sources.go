package sources

import (
	"context"
	"net"
	"net/netip"
	"time"
)

// Name sources, the keys of Host.Names.
const (
	NameDNS     = "dns"
	NameMDNS    = "mdns"
	NameNetBIOS = "netbios"
	NameDNSSD   = "dnssd"
	NameSSDP    = "ssdp"
)

// How a host was found.
const (
	ViaICMP      = "icmp"
	ViaNeighbour = "neighbour"
	// ViaARP: the host answered the sweep's own ARP request (on-link
	// IPv4 networks, with CAP_NET_RAW); its RTT comes from an ICMP echo
	// when it also answers that.
	ViaARP = "arp"
)

// Host is one responder of a sweep, filled in step by step.
type Host struct {
	IP netip.Addr
	// Network is the configured prefix that contains IP.
	Network netip.Prefix
	// MAC from the ARP reply or the neighbour table; nil when unknown
	// (off-link).
	MAC net.HardwareAddr
	// RTT of the fastest echo reply; 0 when only ARP/NDP answered.
	RTT time.Duration
	// Via is ViaICMP, ViaARP or ViaNeighbour.
	Via string
	// Names maps a name source (NameDNS, ...) to the name it gave.
	Names map[string]string
	// Services the host advertises over DNS-SD.
	Services []Service
	// UPnP is the host's SSDP device description, if any.
	UPnP *UPnP
}

// Named reports whether any resolver has named the host.
func (h *Host) Named() bool { return len(h.Names) > 0 }

// SetName records a name from a source, ignoring empty names.
func (h *Host) SetName(source, name string) {
	if name == "" {
		return
	}
	if h.Names == nil {
		h.Names = make(map[string]string, 2)
	}
	h.Names[source] = name
}

// Service is one DNS-SD service instance.
type Service struct {
	Instance string // "Living Room._http._tcp.local." → "Living Room"
	Type     string // "_http._tcp"
	Port     uint16
}

// UPnP is the interesting part of a UPnP device description.
type UPnP struct {
	FriendlyName string
	Manufacturer string
	ModelName    string
}

// Sweep is the result of one device sweep.
type Sweep struct {
	ScanID     string
	Started    time.Time
	Finished   time.Time
	Networks   []netip.Prefix
	ProbesSent int
	// Complete is false when the sweep failed or was cancelled part way.
	Complete bool
	Errors   []string
	Hosts    []*Host
}

// Enricher adds knowledge to the hosts of a sweep (one resolver each).
//
// Enrich must honour ctx, bound every query with its own deadline so one
// slow host never stalls the sweep, and only add to hosts (never remove).
// It is called from one goroutine at a time for a given sweep.
type Enricher interface {
	// Name is the resolver's name source (NameDNS, ...).
	Name() string
	// Enrich adds what it learns to hosts. A returned error is recorded in
	// the sweep's errors; what was added before it is kept.
	Enrich(ctx context.Context, hosts []*Host) error
}

// PortScan is the result of one TCP port scan.
type PortScan struct {
	ScanID     string
	Started    time.Time
	Finished   time.Time
	Ports      string // the probed list in range form, "22,80,8000-8100"
	Targets    int
	ProbesSent int
	Complete   bool
	Errors     []string
	// Open maps every probed address to its open ports (sorted, possibly
	// empty).
	Open map[netip.Addr][]uint16
}

// ContextErr is ctx.Err(), counting a deadline that has passed as
// exceeded even before the context's timer has fired. A socket bound to
// the same deadline can time out a moment before ctx.Err() turns non-nil;
// work cut short that way was cancelled, not failed.
func ContextErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}
