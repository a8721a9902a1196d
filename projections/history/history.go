package history

import (
	"errors"
	"fmt"
	"time"
)

// Device is a device as it was at an instant: the fields whose history
// the inventory keeps (every change of each is recorded, so the view is
// exact). Observation times that move with every sweep (last_seen, the
// names' last_confirmed, evidence) are not part of it.
type Device struct {
	ID         string            `json:"id"`
	Name       string            `json:"name"`
	Names      map[string]string `json:"names"` // source -> name
	MAC        *string           `json:"mac"`
	Vendor     *string           `json:"vendor"`
	Addresses  []Address         `json:"addresses"`
	Ports      []int             `json:"ports"`
	Label      *string           `json:"label"`
	Group      *string           `json:"group"`
	Type       *string           `json:"type"`
	Notes      *string           `json:"notes"`
	Ignored    bool              `json:"ignored"`
	Watched    bool              `json:"watched"`
	Presence   string            `json:"presence"`
	AttachedTo *Attachment       `json:"attached_to"`
	FirstSeen  time.Time         `json:"first_seen"`
	Sources    []string          `json:"sources"`
	// MergedInto, in a stored row only, says the device was merged into
	// that one then: it is shown as part of it, never on its own.
	MergedInto string `json:"merged_into,omitempty"`
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
