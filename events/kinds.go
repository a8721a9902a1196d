package events

// Kinds is the explicit list of every event kind. Adding a kind means adding
// it here and to docs/events.md (a test checks both).
func Kinds() []KindSpec {
	return []KindSpec{
		{Kind: KindSweepCompleted, Version: 2, Payload: SweepCompleted{}, Summary: "one whole device sweep with every responder (v2: the responders unchanged since the source's previous sweep by reference)",
			Upcasters: []Upcaster{{From: 1, Up: sameShape}}},
		{Kind: KindPortScanCompleted, Version: 1, Payload: PortScanCompleted{}, Summary: "one whole TCP port scan with the open ports of every target"},
		{Kind: KindPluginRead, Version: 1, Payload: PluginRead{}, Summary: "one read of a router's, switch's or access point's host tables, as the difference from the previous read"},
		{Kind: KindScanFailed, Version: 1, Payload: ScanFailed{}, Summary: "a source's run that produced nothing, with the reason"},
		{Kind: KindDeviceEdited, Version: 1, Payload: DeviceEdited{}, Summary: "a user changed label, group, type, notes or ignored"},
		{Kind: KindDeviceWatchSet, Version: 1, Payload: DeviceWatchSet{}, Summary: "a user started or stopped watching a device"},
		{Kind: KindDeviceMerged, Version: 1, Payload: DeviceMerged{}, Summary: "a user merged one device into another (ids only)"},
		{Kind: KindDeviceUnmerged, Version: 1, Payload: DeviceUnmerged{}, Summary: "a user separated a merged device from the device it was merged into"},
		{Kind: KindClockTicked, Version: 1, Payload: ClockTicked{}, Summary: "the presence clock: presence is evaluated at this time"},
		{Kind: KindPresenceRulesSet, Version: 1, Payload: PresenceRulesSet{}, Summary: "the presence and identity rules in force from now on (online window, address grace), recorded when serve starts with rules other than the last recorded"},
		{Kind: KindRetentionPurged, Version: 1, Payload: RetentionPurged{}, Summary: "the hourly purge and what it removed"},
		{Kind: KindTokenCreated, Version: 1, Payload: TokenCreated{}, Summary: "an API token was created (its SHA-256 only)"},
		{Kind: KindTokenRevoked, Version: 1, Payload: TokenRevoked{}, Summary: "an API token was revoked"},
		{Kind: KindUserAdded, Version: 1, Payload: UserAdded{}, Summary: "a web sign-in account was added (argon2id hash)"},
		{Kind: KindUserPasswordChanged, Version: 1, Payload: UserPasswordChanged{}, Summary: "an account's password was changed"},
		{Kind: KindUserRemoved, Version: 1, Payload: UserRemoved{}, Summary: "an account was removed"},
		{Kind: KindSessionStarted, Version: 1, Payload: SessionStarted{}, Summary: "a user signed in to the web interface (the cookie secret's SHA-256 only)"},
		{Kind: KindSessionEnded, Version: 1, Payload: SessionEnded{}, Summary: "a web session was signed out or ended as idle"},
		{Kind: KindNotifyRulesSet, Version: 1, Payload: NotifyRulesSet{}, Summary: "a user set which changes a notification destination receives"},
		{Kind: KindTrafficRecorded, Version: 2, Payload: TrafficRecorded{}, Summary: "one flush window of a flow listener: aggregated flow rows and the listener's state (v2: rows packed)",
			Upcasters: []Upcaster{{From: 1, Up: sameShape}}}, // v1's array of rows is still read (TrafficRows)
		{Kind: KindDNSRead, Version: 1, Payload: DNSRead{}, Summary: "one read of a DNS server's query log: hourly lookup rows per client and domain, and the new cursor"},
	}
}
