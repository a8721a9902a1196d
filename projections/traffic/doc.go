// Package traffic is the traffic read model: hourly totals of bytes,
// packets and flows per local address, peer, direction and
// protocol/port, with the peer's country, built from the flow listeners'
// traffic.recorded events (sources/flowlistener).
//
// # Overview
//
// [Projection] is a runner.Projection (name "traffic", version 2). Each
// traffic.recorded row (source → destination, protocol, service port)
// is added to the hour of its window's end twice: once with the source
// as the local side (direction out) and once with the destination as
// the local side (direction in). The rows are walked straight from the
// payload (events.EachTrafficRow), never decoded into a slice.
//
// # Summary: TopPeers per address and hour
//
// The first [TopPeers] (100) peers of a local address in an hour keep
// their own rows (within one window, the busiest first); the rows of
// every later peer of that hour are folded into one row per (country,
// direction) of the address, shown by=peer as "other:<country>" and
// counted in every total but never as a top peer. A kept peer's rows
// hold all its traffic of the hour and a folded peer never gets a row
// later in that hour, so kept rows are exact and folding changes no
// total of a device, hour, country or direction. It bounds the rows of
// an hour to about TopPeers per address: an Internet peer that talks to
// 10,000 devices costs 100 rows and one folded row, not 10,000. Rows are keyed by address, not device:
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
// are not globally routed have none. Home is what the map draws from:
// location.country, else the country of the router's outside address
// (Options.Outside: the inventory's, from the router plugins' reads). Peer names come through Options.PeerName, the hook
// for the DNS plugins' answers.
//
// retention.purged with a traffic cutoff deletes the hours before it
// (retention.traffic). The projection also keeps each listener's last
// window: a listener that starts again after a window without "final"
// lost the window in between to a crash, and [Projection.Gaps] says so
// (the service logs it at start).
//
// A window of more than about 10,000 rows is written in parts
// (runner.Chunker): [Projection.ApplyChunks] writes its sides in
// transactions of about 16,384 each, a local address's group never
// split, storing in each how far it got (key "\x00progress" of
// traffic.sources) so that a crash resumes there; Apply then finds the
// rows written, keeps the listener's state and drops the progress. The
// rows are the same as written at once (the same groups in the same
// order); a reader may see a window in part meanwhile. One transaction
// for a window of 166,667 rows held about 110 MB of heap; in parts it
// holds a few MB.
//
// # Storage
//
// traffic.hours: hour (8 bytes, unix seconds) | minute (1) | local (16) |
// kind (1: 0 peer, 1 folded) | peer (16; folded: zero but for the
// country's two letters at its end) | direction (1) | protocol (1) |
// port (2) → country (2) | bytes, packets, flows (uvarint each).
// Hour-major keys make a range a contiguous scan and retention a prefix
// delete. Minute is the minute of the hour in which the row first
// appeared: a window's new rows go to its own minute, so writing them
// appends to the hour rather than touching every page of it (bbolt
// keeps every page a write transaction touches in memory until the
// commit, and keyed by address alone every window touched every row of
// the hour so far); a row seen again later in the hour is added to
// where it is. Reading an address's hour is then a seek per minute that
// holds rows. A window's sides are written in key order (out sides as
// the listener's sorted rows arrive, an address at a time; in sides
// collected and sorted), since bbolt inserts in random order cost about
// the square of their number. Keys and values are carved from 256 KiB
// slabs (bbolt keeps them until the commit). traffic.sources: source →
// last window.
//
// # Concurrency
//
// Apply and Load run on the runner's goroutine; queries read committed
// rows in their own read transactions and are safe for concurrent use.
package traffic
