package events

import "time"

// Kinds of user and clock events about devices.
const (
	// KindDeviceEdited records a user's change of label, group, type,
	// notes or ignored.
	KindDeviceEdited = "device.edited"
	// KindDeviceWatchSet records a user starting or stopping to watch.
	KindDeviceWatchSet = "device.watch_set"
	// KindClockTicked is appended by the presence clock when time passing
	// may change presence; projections evaluate presence at At.
	KindClockTicked = "clock.ticked"
	// KindRetentionPurged records an hourly purge and what it removed.
	KindRetentionPurged = "retention.purged"
	// KindPresenceRulesSet records the presence and identity rules in
	// force from its time on (inventory.online_window and
	// inventory.address_grace), so that a replay under another
	// configuration still reproduces the presence that was shown.
	KindPresenceRulesSet = "inventory.rules_set"
)

// PresenceRulesSet is the payload of inventory.rules_set: the rules in
// whole seconds, as the configuration writes them.
type PresenceRulesSet struct {
	// OnlineWindowS is inventory.online_window in seconds (> 0).
	OnlineWindowS int64 `json:"online_window_s"`
	// AddressGraceS is inventory.address_grace in seconds; 0 retires an
	// address at the first complete sweep that misses it.
	AddressGraceS int64 `json:"address_grace_s"`
}

// DeviceEdited is the payload of device.edited. A nil field is unchanged;
// a field named in Cleared was set to null.
type DeviceEdited struct {
	Label   *string  `json:"label,omitempty"`
	Group   *string  `json:"group,omitempty"`
	Type    *string  `json:"type,omitempty"`
	Notes   *string  `json:"notes,omitempty"`
	Ignored *bool    `json:"ignored,omitempty"`
	Cleared []string `json:"cleared,omitempty"`
}

// DeviceWatchSet is the payload of device.watch_set.
type DeviceWatchSet struct {
	Watched bool `json:"watched"`
}

// ClockTicked is the payload of clock.ticked.
type ClockTicked struct {
	At time.Time `json:"at"`
}

// RetentionPurged is the payload of retention.purged. Each cutoff is the
// time before which records of that kind are removed; a nil cutoff keeps
// them forever (0s in the configuration).
type RetentionPurged struct {
	HistoryBefore *time.Time `json:"history_before,omitempty"`
	TrafficBefore *time.Time `json:"traffic_before,omitempty"`
	DNSBefore     *time.Time `json:"dns_before,omitempty"`
	DevicesBefore *time.Time `json:"devices_before,omitempty"`
	// Counts of what was removed, by record type ("changes", "scans",
	// "devices", ...), as computed when the purge was decided.
	Counts map[string]int `json:"counts"`
	// DeletedDevices lists the ids of devices removed.
	DeletedDevices []string `json:"deleted_devices,omitempty"`
}
