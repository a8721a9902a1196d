// Package inventory is the inventory read model: devices and the change
// log (/api/events), built by one projection so that one Apply keeps the
// two consistent. The scan log (/api/scans) is its own projection,
// projections/scanlog, fed the same events; the inventory keeps each
// source's health from them itself. The presence clock
// (projections/presence) and the retention job (projections/retention)
// are jobs beside it that append the events time passing calls for,
// reading only NextPresenceDeadline and PurgePlan. The change feed
// (ChangesAfter) is what the notification dispatcher follows.
//
// # Overview
//
// [Inventory] is a runner.Projection (name "inventory"). It reads
// sweep.completed, portscan.completed, plugin.read, dns.read and
// scan.failed (sources' health), device.edited, device.watch_set,
// device.merged and device.unmerged (merge.go), clock.ticked and
// retention.purged, and skips every other kind. It keeps devices in memory (queries take a read lock) and
// writes their rows and the change log to its buckets in
// the runner's transaction; Load rebuilds memory from the rows, and a
// test reloads after every scenario to prove nothing lives only in
// memory. Apply never reads the clock: times come from events.
//
// # Devices
//
// Identity is the MAC where one is known, else the address (off-link
// hosts). A host with a MAC is the device with that MAC; else an
// address-only device at the same address, which gains the MAC (a
// device.mac_changed entry, old null); else a new device. A host without
// a MAC is the device that most recently answered at that address (its
// neighbour entry was missing this time); else the address-only device of
// that address; else a new one. MACs being identity, device.mac_changed
// is only ever an address-only device gaining its first MAC: another MAC
// at a known address is another device.
//
// The id is "d" + 16 lower-case base32 characters of SHA-256 of the
// identity ("m/<mac>" or "i/<ip>"), with a counter mixed in on a clash,
// so a replay gives the same ids. It never changes, even when an
// address-only device gains a MAC.
//
// Addresses: each has ip, network, first_seen, last_seen and retired_at.
// When a sweep finds a device, every other current address of it unseen
// for longer than inventory.address_grace (relative to the sweep's finish
// time) is retired (device.address_retired). A new address, or a retired
// one seen again, gives device.address_added. A second device answering
// at a current address of another takes the address for lookups (port
// scans, MAC-less hosts); the first keeps it until the grace retires it.
//
// Names: one per source (dns, dhcp, router, mdns, netbios, dnssd, ssdp;
// a UPnP friendlyName counts as ssdp), each with the time it was last
// confirmed. The name is the best by precedence dns > dhcp > router >
// mdns > netbios > dnssd > ssdp > other sources alphabetically, else the
// current address. device.name_changed records changes of the best
// resolved name (not of the address fallback). The label is separate.
//
// vendor comes from Options.Vendor at load and when the MAC is learnt
// (never stored); mac_random is the locally administered bit (0x02 of
// the first octet). Every field keeps its evidence: the source (and user,
// for edits) that last set or confirmed it, and when.
//
// # Presence
//
// A device is online while last_seen ≥ T − inventory.online_window,
// evaluated only at event times T: a sweep's finish, a port scan's
// finish, a clock tick's At. Past the window it goes offline (quiet when
// watched) only with evidence of absence: a complete sweep that covers
// one of its current addresses (any complete sweep for an address with no
// network) and started after last_seen. A failed or cut-short sweep is
// never evidence, so it never turns a device offline. Devices past the
// window without evidence stay online until a complete sweep brings it.
// A device seen again gives device.online; a first sighting gives only
// device.discovered. Watching an offline device makes it quiet, and
// unwatching a quiet one offline, without a presence entry (the watch
// entry says it). An open port is a sighting too.
//
// The presence clock (projections/presence) appends clock.ticked{At: now} (source "clock") once now is past
// [Inventory.NextPresenceDeadline] (the earliest last_seen + window of an
// online device not yet past it), so replays evaluate presence at the
// same times. It appends nothing while nothing is due.
//
// # Ports and scans
//
// A port scan's open ports go to the device currently holding each
// probed address (device.port_opened). A complete scan closes a known
// port it probed (in its port list or advertised over DNS-SD) and found
// closed (device.port_closed); an incomplete one closes nothing. A port's
// service is the DNS-SD service the device advertises on it, else the
// IANA name of a well-known port, else "".
//
// # Change log
//
// Entries: id (event id + "-" + index), seq (of the event), time (of the
// event), kind, device_id, source, actor (the event's actor, else its
// source), summary (one sentence, e.g. "printer.lab (10.0.0.5) was
// discovered by sweep:lab", "Kitchen TV went offline (last seen
// 2026-11-22 10:00 UTC)", `alice set the label of printer.lab to
// "Printer"`, `bob changed the label of printer.lab from "Printer" to
// "Office printer"`, `carol cleared the label of printer.lab (was
// "Office printer")`) and data: {old, new} for mac_changed, name_changed,
// online/offline/quiet (presence), edited (the field's value, null when
// cleared) and watch_started/stopped (watched), else null. Each edited
// field is its own device.edited entry; an edit that changes nothing
// gives none.
//
// # Retention
//
// The retention job (projections/retention) runs once an hour: it
// computes the cutoffs from its Options (0 = forever, no cutoff) and, only if something is
// to be removed, appends a retention.purged event (source "retention")
// with the counts and the devices to delete: last seen before the devices
// cutoff and not protected (label, group, type, notes, ignored or
// watched). Applying it removes change-log entries older than the
// history cutoff (the scan log removes its own entries), and each listed device that is still unprotected
// and still last seen before the cutoff, with its own change-log entries,
// leaving one device.deleted entry. Then the purger waits for the runner
// to apply it and asks the runner to compact the log behind the newest
// snapshot older than the history cutoff. Traffic and DNS cutoffs are
// recorded for the projections that will store those.
//
// # Queries
//
// ListDevices filters by q (case-insensitive substring of any name, the
// label, any address including retired ones, the MAC or the vendor),
// group, presence, network (a current address in the prefix), watched and
// ignored, and sorts by name, ip (current address), first_seen or
// last_seen, ties by id; a leading "-" reverses the whole order. Sorted
// orders are built on first use after a change and shared by readers.
// ListEvents reads the committed rows newest first (by seq); since/until
// bound an entry's time. Lists default to 100 items, at most 1000; cursors are
// opaque URL-safe strings and a cursor this package did not issue (or of
// another sort) is projections.ErrBadCursor.
//
// q= searches one text per device laid end to end in the order of the
// sort (built on the first search after a change), looking first for the
// query's byte rarest in it. AppendDevicesJSON and DeviceJSON answer
// with the devices already encoded (the API's optional
// httpapi.DeviceJSONReader): a device is encoded on first use after a
// change and its document cached until the next change, within a bound
// (CLOCK eviction past 2 MiB), so Apply and replays never encode, and
// reading a page copies bytes.
//
// # Storage
//
// Buckets (all "inventory.*"): devices (id → JSON row), changes (seq +
// index → time, kind, JSON entry), changes_by_device, changes_by_time
// (indexes for device queries and retention), changes_group_steady (the
// keys of presence entries of merged devices that did not change their
// group's presence: the feed marks them GroupSteady, and they are never
// notified) and meta (the start of the newest complete sweep per
// network, the presence evidence).
//
// # History
//
// history (device id + time + seq → the device's history fields after
// an event that changed them) and history_by_time answer the inventory
// at an instant and diffs (DeviceAt, DevicesAt, StatsAt, Diff; at.go,
// docs/history.md).
package inventory
