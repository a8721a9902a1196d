package events

import "time"

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
	Complete bool        `json:"complete"`
	Errors   []string    `json:"errors,omitempty"`
	Hosts    []SweepHost `json:"hosts"`
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
	// Names maps a resolver (dns, mdns, netbios, dnssd, ssdp) to a name.
	Names map[string]string `json:"names,omitempty"`
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
