// Package traffic is the traffic read model: hourly totals of bytes,
// packets and flows per local address, peer, direction and
// protocol/port, with the peer's country, built from the flow listeners'
// traffic.recorded events (sources/flowlistener).
//
// # Overview
//
// [Projection] is a runner.Projection (name "traffic", version 1). Each
// traffic.recorded row (source → destination, protocol, service port)
// is added to the hour of its window's end twice: once with the source
// as the local side (direction out) and once with the destination as
// the local side (direction in). Rows are keyed by address, not device:
// GET /api/devices/{id}/traffic and GET /api/traffic attribute a row to
// the device that held its local address during that hour, from the
// inventory's address history (inventory.HoldingIndex), so traffic seen
// before a sweep found its device is still attributed, a replay gives
// the same rows, and a row whose local address no device held (the
// Internet side of a flow) is simply never counted. Traffic between two
// devices counts for both, out for one and in for the other.
//
// Countries come from an embedded public-domain IP → country database
// (data/README.md) or an operator's MaxMind-format file; addresses that
// are not globally routed have none. Home (location.country) is what the
// map draws from. Peer names come through Options.PeerName, the hook
// for the DNS plugins' answers.
//
// retention.purged with a traffic cutoff deletes the hours before it
// (retention.traffic). The projection also keeps each listener's last
// window: a listener that starts again after a window without "final"
// lost the window in between to a crash, and [Projection.Gaps] says so
// (the service logs it at start).
//
// # Storage
//
// traffic.hours: hour (8 bytes, unix seconds) | local (16) | peer (16) |
// direction (1) | protocol (1) | port (2) → bytes, packets, flows (8
// each) | country (2). Hour-major keys make a range a contiguous scan and
// retention a prefix delete. traffic.sources: source → last window.
//
// # Concurrency
//
// Apply and Load run on the runner's goroutine; queries read committed
// rows in their own read transactions and are safe for concurrent use.
package traffic
