package events

import "time"

// KindPluginRead records one read of a plugin peer's host tables (a
// router's leases and neighbours, a switch's bridge hosts, an access
// point's wireless clients). One event per read, never one per row, and
// compact: a read is written as the difference from the previous read of
// the same source, so a stable network appends a few dozen bytes a read.
const KindPluginRead = "plugin.read"

// PluginRead is the payload of plugin.read.
//
// The hosts of a source are a set keyed by MAC that every read updates:
//
//   - Base 0: Set is every host read. A complete read replaces the set
//     with it; an incomplete one adds and updates its hosts and removes
//     none (what was not read is not gone).
//   - Base N > 0: the read is complete and is the difference from the
//     source's read at seq N: Set adds or updates hosts, Gone removes them,
//     every other host is as it was.
//
// After a complete read, every host of the set whose Seen is true was
// seen at Finished; after an incomplete one, only the hosts in Set.
type PluginRead struct {
	ScanID   string    `json:"scan_id"`
	Kind     string    `json:"kind"` // the source kind: "routerapi", "rpcrouter"
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Complete bool      `json:"complete"`
	Errors   []string  `json:"errors,omitempty"`
	// Rows is the number of table rows read, Hosts the number of hosts
	// they made (the size of the set after a complete read).
	Rows  int `json:"rows"`
	Hosts int `json:"hosts"`
	// Peer is the device read, when it changed or Base is 0.
	Peer *ReadPeer  `json:"peer,omitempty"`
	Base uint64     `json:"base,omitempty"`
	Set  []ReadHost `json:"set,omitempty"`
	Gone []string   `json:"gone,omitempty"`
}

// ReadPeer is what a read says about the device read itself.
type ReadPeer struct {
	Name  string   `json:"name,omitempty"`
	Model string   `json:"model,omitempty"`
	MACs  []string `json:"macs,omitempty"`
	// Outside is its outside address (a router's IPv4 address on the
	// interface of its default route), when read.
	Outside string `json:"outside,omitempty"`
}

// ReadHost is one host of a read. The keys are short: a read of a
// network that changed carries one of these per changed host.
type ReadHost struct {
	MAC string `json:"m"`
	// IPs the peer holds for the host.
	IPs []string `json:"a,omitempty"`
	// Names by name source ("dhcp", "router").
	Names map[string]string `json:"n,omitempty"`
	// Seen: the peer saw the host at the time of the read.
	Seen bool `json:"s,omitempty"`
	// Port the host hangs off (bridge port, wireless interface), SSID and
	// Band of its wireless association, Signal in dBm (0 unknown).
	Port   string `json:"p,omitempty"`
	SSID   string `json:"w,omitempty"`
	Band   string `json:"b,omitempty"`
	Signal int    `json:"g,omitempty"`
}
