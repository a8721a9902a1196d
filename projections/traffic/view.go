package traffic

import (
	"net/netip"
	"time"
)

// Query dimensions of DeviceTraffic (by=).
const (
	ByPeer    = "peer"
	ByCountry = "country"
	ByHour    = "hour"
)

// Totals are bytes, packets and flows in each direction, as the device
// sees them: in is towards it, out from it.
type Totals struct {
	BytesIn    uint64 `json:"bytes_in"`
	BytesOut   uint64 `json:"bytes_out"`
	PacketsIn  uint64 `json:"packets_in"`
	PacketsOut uint64 `json:"packets_out"`
	FlowsIn    uint64 `json:"flows_in"`
	FlowsOut   uint64 `json:"flows_out"`
}

func (t *Totals) add(in bool, v val) {
	if in {
		t.BytesIn += v.bytes
		t.PacketsIn += v.packets
		t.FlowsIn += v.flows
		return
	}
	t.BytesOut += v.bytes
	t.PacketsOut += v.packets
	t.FlowsOut += v.flows
}

func (t Totals) bytes() uint64 { return t.BytesIn + t.BytesOut }

// Item is one row of GET /api/devices/{id}/traffic: a peer, a country or
// an hour, with its totals.
type Item struct {
	// Key is the peer's address, the country code ("" for peers with no
	// country: private or unknown addresses) or the hour (RFC 3339).
	Key string `json:"key"`
	// Peer fields (by=peer): the address, its name when a DNS answer
	// recorded for the device named it, and its country.
	Peer    string     `json:"peer,omitempty"`
	Name    string     `json:"name,omitempty"`
	Country string     `json:"country,omitempty"`
	Hour    *time.Time `json:"hour,omitempty"`
	Totals

	// peer and hour name a peer item once the read is over (memory only).
	peer netip.Addr
	hour time.Time
}

// Filter selects a device's traffic.
type Filter struct {
	Since, Until time.Time // hours starting in [Since, Until)
	By           string    // ByPeer (default), ByCountry, ByHour
	// Q keeps items whose key, name or country contains it
	// (case-insensitive).
	Q      string
	Limit  int
	Cursor string
}

// Overview is GET /api/traffic: the top devices, countries and peers of
// a range, for the map.
type Overview struct {
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	Home  string    `json:"home"`
	// HomeFrom says where Home comes from: "location.country", or the
	// router's outside address it was derived from; "" with no Home.
	HomeFrom  string         `json:"home_from"`
	Total     Totals         `json:"total"`
	Devices   []DeviceTotal  `json:"devices"`
	Countries []CountryTotal `json:"countries"`
	Peers     []PeerTotal    `json:"peers"`
}

// DeviceTotal is one device's totals.
type DeviceTotal struct {
	DeviceID string `json:"device_id"`
	Totals
}

// CountryTotal is one country's totals ("" = no country).
type CountryTotal struct {
	Country string `json:"country"`
	Totals
}

// PeerTotal is one peer's totals across devices.
type PeerTotal struct {
	Peer    string `json:"peer"`
	Country string `json:"country"`
	Totals
}
