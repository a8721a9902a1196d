package projections

import (
	"errors"
	"net/netip"
	"time"
)

// Change-log kinds: the kind values of /api/events. They are derived by
// the change-log projection from the events in the log.
const (
	ChangeDiscovered     = "device.discovered"
	ChangeAddressAdded   = "device.address_added"
	ChangeAddressRetired = "device.address_retired"
	ChangeMACChanged     = "device.mac_changed"
	ChangeNameChanged    = "device.name_changed"
	ChangeOnline         = "device.online"
	ChangeOffline        = "device.offline"
	ChangeQuiet          = "device.quiet"
	ChangePortOpened     = "device.port_opened"
	ChangePortClosed     = "device.port_closed"
	ChangeEdited         = "device.edited"
	ChangeWatchStarted   = "device.watch_started"
	ChangeWatchStopped   = "device.watch_stopped"
	ChangeAttached       = "device.attached"
	ChangeDeleted        = "device.deleted"
	// ChangeMerged and ChangeUnmerged are a user's merge of another device
	// into this one and its undoing; data is the other device's id (new
	// when merged, old when unmerged).
	ChangeMerged   = "device.merged"
	ChangeUnmerged = "device.unmerged"
	// ChangeSourceFailing and ChangeSourceRecovered concern a source, not a
	// device (device_id is empty): a source's run failed or was cut
	// short after it had worked, and it completed one again.
	ChangeSourceFailing   = "source.failing"
	ChangeSourceRecovered = "source.recovered"
)

// ChangeKinds lists every change-log kind, in the order filters offer
// them.
func ChangeKinds() []string {
	return []string{
		ChangeDiscovered, ChangeAddressAdded, ChangeAddressRetired, ChangeMACChanged, ChangeNameChanged,
		ChangeOnline, ChangeOffline, ChangeQuiet, ChangePortOpened, ChangePortClosed, ChangeEdited,
		ChangeWatchStarted, ChangeWatchStopped, ChangeAttached, ChangeDeleted,
		ChangeSourceFailing, ChangeSourceRecovered, ChangeMerged, ChangeUnmerged,
	}
}

// Presence values.
const (
	PresenceOnline  = "online"
	PresenceOffline = "offline"
	PresenceQuiet   = "quiet"
)

// Device is one inventory entry as the API shows it.
type Device struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Names      map[string]Name `json:"names"`
	Label      *string         `json:"label"`
	Group      *string         `json:"group"`
	Type       *string         `json:"type"`
	Notes      *string         `json:"notes"`
	Ignored    bool            `json:"ignored"`
	Watched    bool            `json:"watched"`
	Presence   string          `json:"presence"`
	FirstSeen  time.Time       `json:"first_seen"`
	LastSeen   time.Time       `json:"last_seen"`
	MAC        *string         `json:"mac"`
	MACRandom  bool            `json:"mac_random"`
	Vendor     *string         `json:"vendor"`
	Addresses  []Address       `json:"addresses"`
	Ports      []Port          `json:"ports"`
	Services   []Service       `json:"services"`
	Sources    []string        `json:"sources"`
	AttachedTo *Attachment     `json:"attached_to"`
	// Coverage is set when the device is past the online window but no
	// source that saw it lately can say it is gone (it is failing, or has
	// not read since): its presence stands, unconfirmed.
	Coverage *Coverage           `json:"coverage"`
	Evidence map[string]Evidence `json:"evidence"`
	// UPnP is what the device's SSDP description says, if it answered.
	UPnP *UPnP `json:"upnp"`
}

// UPnP is the interesting part of a device's UPnP description.
type UPnP struct {
	FriendlyName string `json:"friendly_name"`
	Manufacturer string `json:"manufacturer"`
	ModelName    string `json:"model_name"`
}

// Name is one name of a device from one source.
type Name struct {
	Name          string    `json:"name"`
	LastConfirmed time.Time `json:"last_confirmed"`
}

// Evidence says which source last set or confirmed a field and when;
// for a user's edit, Actor names the user or token.
type Evidence struct {
	Source string    `json:"source"`
	Actor  string    `json:"actor,omitempty"`
	Time   time.Time `json:"time"`
}

// Address is one IP address a device has had.
type Address struct {
	IP        string     `json:"ip"`
	Network   string     `json:"network"`
	FirstSeen time.Time  `json:"first_seen"`
	LastSeen  time.Time  `json:"last_seen"`
	RetiredAt *time.Time `json:"retired_at"`
}

// Port is one open TCP port of a device.
type Port struct {
	Port      uint16    `json:"port"`
	Proto     string    `json:"proto"`
	Service   string    `json:"service"`
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
}

// Service is one advertised DNS-SD service of a device.
type Service struct {
	Instance string `json:"instance"`
	Type     string `json:"type"`
	Port     uint16 `json:"port"`
}

// Attachment is where a device is plugged in (switch port or AP SSID),
// as a router, switch or access point read by a plugin says.
type Attachment struct {
	// DeviceID is the switch or access point in the inventory; nil while
	// the inventory has no device with one of its MACs.
	DeviceID *string `json:"device_id"`
	// Source is the plugin instance that said so, Peer the device's own
	// name (RouterOS identity, OpenWrt host name).
	Source string `json:"source"`
	Peer   string `json:"peer,omitempty"`
	Port   string `json:"port,omitempty"`
	SSID   string `json:"ssid,omitempty"`
	Band   string `json:"band,omitempty"`
	// Signal in dBm of a wireless association, nil when unknown.
	Signal *int `json:"signal"`
}

// Coverage says that no working source covers a device any more.
type Coverage struct {
	// State is "not_covered".
	State string `json:"state"`
	// Source is the source that saw the device last, Since when it has
	// been failing (or, when it is not failing but has not read, when it
	// saw the device), Reason its last failure.
	Source string    `json:"source"`
	Since  time.Time `json:"since"`
	Reason string    `json:"reason,omitempty"`
}

// ChangeEntry is one change-log entry.
type ChangeEntry struct {
	ID       string    `json:"id"`
	Seq      uint64    `json:"seq"`
	Time     time.Time `json:"time"`
	Kind     string    `json:"kind"`
	DeviceID string    `json:"device_id"`
	Source   string    `json:"source"`
	Actor    string    `json:"actor"`
	Summary  string    `json:"summary"`
	Data     *OldNew   `json:"data"`
	// GroupSteady marks a presence entry of a device merged with others
	// that did not change the presence its group shows: a member went
	// offline or quiet while another one was online, or came back while
	// another one was. The change log keeps such entries (each member's
	// history stays its own, so an unmerge restores it exactly); the
	// notification dispatcher does not send them. Only the change feed
	// sets it, and it is never written out.
	GroupSteady bool `json:"-"`
}

// OldNew is the data of a change that replaced a value.
type OldNew struct {
	Old any `json:"old"`
	New any `json:"new"`
}

// Scan is one entry of the scan log.
type Scan struct {
	ID         string    `json:"id"`
	Source     string    `json:"source"`
	Kind       string    `json:"kind"` // "devices", "ports", or a plugin's kind
	Started    time.Time `json:"started"`
	Finished   time.Time `json:"finished"`
	DurationMS int64     `json:"duration_ms"`
	Networks   []string  `json:"networks"`
	ProbesSent int       `json:"probes_sent"`
	HostsFound int       `json:"hosts_found"`
	// Rows is the number of table rows a plugin read.
	Rows     int      `json:"rows,omitempty"`
	Complete bool     `json:"complete"`
	Errors   []string `json:"errors"`
}

// Group is one device group in use.
type Group struct {
	Name    string `json:"name"`
	Devices int    `json:"devices"`
}

// Stats are counts across the inventory.
type Stats struct {
	Devices      int            `json:"devices"`
	ByPresence   map[string]int `json:"by_presence"`
	ByGroup      map[string]int `json:"by_group"`
	ByNetwork    map[string]int `json:"by_network"`
	BySource     map[string]int `json:"by_source"`
	Watched      int            `json:"watched"`
	Ignored      int            `json:"ignored"`
	NewestDevice *Device        `json:"newest_device"`
}

// WatchState is the answer of PATCH /api/devices/{id}/watch.
type WatchState struct {
	Watched  bool   `json:"watched"`
	Presence string `json:"presence"`
}

// Token is an API token as listed (never its secret or hash).
type Token struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Mode       string     `json:"mode"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	State      string     `json:"state"` // "active" or "expired"
}

// Principal is who a request acts as after authentication.
type Principal struct {
	TokenID string
	Name    string
	Mode    string // events.ModeRead or events.ModeReadWrite
}

// Page is one page of a list.
type Page[T any] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

// DeviceFilter selects and orders devices.
type DeviceFilter struct {
	Q        string
	Group    string
	Presence string
	Network  *netip.Prefix
	Watched  *bool
	Ignored  *bool
	Sort     string // name, ip, first_seen, last_seen; "-" prefix = descending
	Limit    int
	Cursor   string
}

// EventFilter selects change-log entries, newest first.
type EventFilter struct {
	Device string
	Kinds  []string
	Since  *time.Time
	Until  *time.Time
	Limit  int
	Cursor string
}

// ScanFilter selects scans, newest first.
type ScanFilter struct {
	Source string
	Since  *time.Time
	Until  *time.Time
	Limit  int
	Cursor string
}

var (
	// ErrNotFound is returned for an unknown device (or other record).
	ErrNotFound = errors.New("not found")
	// ErrBadCursor is returned for a cursor this server did not issue.
	ErrBadCursor = errors.New("malformed cursor")
	// ErrInvalidToken is returned for a missing, unknown, expired or
	// revoked API token.
	ErrInvalidToken = errors.New("invalid token")
	// ErrWriteFailed is returned by a command whose append the database
	// failed to commit (a write or fsync error, a full disk): whether it
	// was applied is unknown, and the service is stopping so that a
	// restart settles it.
	ErrWriteFailed = errors.New("the database failed to commit the change")
)
