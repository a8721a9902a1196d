package history

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// Device is a device as it was at an instant: the fields whose history
// the inventory keeps (every change of each is recorded, so the view is
// exact), in the shapes of the live device (projections.Device) where
// they share a name. Observation times that move with every sweep
// (last_seen, the names' last_confirmed, the ports' first and last seen,
// evidence) are not part of it, nor the advertised services.
type Device struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Names map[string]Name `json:"names"` // by source
	MAC   *string         `json:"mac"`
	// MACRandom is the locally administered bit of the MAC (as live).
	MACRandom  bool        `json:"mac_random"`
	Vendor     *string     `json:"vendor"`
	Addresses  []Address   `json:"addresses"`
	Ports      []Port      `json:"ports"`
	Label      *string     `json:"label"`
	Group      *string     `json:"group"`
	Type       *string     `json:"type"`
	Notes      *string     `json:"notes"`
	Ignored    bool        `json:"ignored"`
	Watched    bool        `json:"watched"`
	Presence   string      `json:"presence"`
	AttachedTo *Attachment `json:"attached_to"`
	FirstSeen  time.Time   `json:"first_seen"`
	Sources    []string    `json:"sources"`
}

// Name is a device's name from one source.
type Name struct {
	Name string `json:"name"`
}

// Port is an open TCP port, with the service usually behind it.
type Port struct {
	Port    uint16 `json:"port"`
	Proto   string `json:"proto"`
	Service string `json:"service"`
}

// Address is one address a device had, ordered by IP.
type Address struct {
	IP        string     `json:"ip"`
	Network   string     `json:"network"`
	FirstSeen time.Time  `json:"first_seen"`
	RetiredAt *time.Time `json:"retired_at"`
}

// Attachment is where a device hung off (the signal strength, which moves
// all the time, is not kept).
type Attachment struct {
	DeviceID *string `json:"device_id"`
	Source   string  `json:"source"`
	Peer     string  `json:"peer,omitempty"`
	Port     string  `json:"port,omitempty"`
	SSID     string  `json:"ssid,omitempty"`
	Band     string  `json:"band,omitempty"`
}

// Stats is GET /api/stats at an instant: the same counts as
// projections.Stats, over the devices of that instant.
type Stats struct {
	At           time.Time      `json:"at"`
	Devices      int            `json:"devices"`
	ByPresence   map[string]int `json:"by_presence"`
	ByGroup      map[string]int `json:"by_group"`
	ByNetwork    map[string]int `json:"by_network"`
	BySource     map[string]int `json:"by_source"`
	Watched      int            `json:"watched"`
	Ignored      int            `json:"ignored"`
	NewestDevice *Device        `json:"newest_device"`
}

// Diff is what changed between two instants.
type Diff struct {
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	Added   []Device  `json:"added"`   // at To, not at From
	Removed []Device  `json:"removed"` // at From, not at To
	Changed []Changed `json:"changed"`
}

// Changed is one device present at both instants whose fields differ.
type Changed struct {
	ID     string                 `json:"id"`
	Name   string                 `json:"name"` // at To
	Fields map[string]FieldChange `json:"fields"`
}

// FieldChange is one field's value at From and at To.
type FieldChange struct {
	From any `json:"from"`
	To   any `json:"to"`
}

// DiffFields are the fields a Diff compares, in the order of the issue.
var DiffFields = []string{"name", "names", "mac", "addresses", "ports", "vendor", "label", "group", "type",
	"notes", "ignored", "watched", "presence", "attached_to"}

// ErrCompacted is the error of an instant before the kept history.
var ErrCompacted = errors.New("history compacted")

// CompactedError says that an instant is older than the kept history,
// and which is the earliest that works. It matches ErrCompacted.
type CompactedError struct {
	At       time.Time
	Earliest time.Time
}

func (e *CompactedError) Error() string {
	return fmt.Sprintf("%s is before the kept history: the earliest instant that can be shown is %s",
		e.At.UTC().Format(time.RFC3339), e.Earliest.UTC().Format(time.RFC3339Nano))
}

// Is makes errors.Is(err, ErrCompacted) true.
func (e *CompactedError) Is(target error) bool { return target == ErrCompacted }

// Filter selects devices at an instant as GET /api/devices selects the
// live ones. The zero Filter selects every device.
type Filter struct {
	// Q is a case-insensitive substring of the name, any name by source,
	// the label, any address (current or retired), the MAC or the vendor.
	Q string
	// Group is the exact group; Presence online, offline or quiet.
	Group, Presence string
	// Network selects devices with a current address inside it.
	Network *netip.Prefix
	// Watched and Ignored, when set, select by that flag.
	Watched, Ignored *bool
}

// Match reports whether d is selected.
func (f Filter) Match(d *Device) bool {
	switch {
	case f.Group != "" && (d.Group == nil || *d.Group != f.Group),
		f.Presence != "" && d.Presence != f.Presence,
		f.Watched != nil && d.Watched != *f.Watched,
		f.Ignored != nil && d.Ignored != *f.Ignored:
		return false
	}
	if f.Network != nil && !slices.ContainsFunc(d.Addresses, func(a Address) bool {
		ip, err := netip.ParseAddr(a.IP)
		return err == nil && a.RetiredAt == nil && f.Network.Contains(ip)
	}) {
		return false
	}
	if f.Q == "" {
		return true
	}
	q := strings.ToLower(f.Q)
	has := func(s string) bool { return strings.Contains(strings.ToLower(s), q) }
	if has(d.Name) || (d.MAC != nil && has(*d.MAC)) || (d.Vendor != nil && has(*d.Vendor)) || (d.Label != nil && has(*d.Label)) {
		return true
	}
	for _, n := range d.Names {
		if has(n.Name) {
			return true
		}
	}
	return slices.ContainsFunc(d.Addresses, func(a Address) bool { return has(a.IP) })
}
