// Package flowlistener is the flowlistener source kind: a UDP listener
// for routers' NetFlow v5, v9 and IPFIX exports
// (plugins.flowlistener.<instance>), a sources.Listener.
//
// # Overview
//
// Datagrams are accepted only from the configured exporters; others are
// dropped unparsed and counted (not_exporter). The decoders (decode.go)
// are this package's own, bounds-checked over the datagram and allocation
// free per record: templates are kept per (exporter, version, source id /
// observation domain), refreshed by every resend and dropped when not
// refreshed within Options.TemplateLifetime; IPFIX withdrawals remove
// them; data sets that arrive before their template are held (a few,
// bounded) and decoded when it comes. Options templates give the
// sampling interval (v9 34/50, IPFIX 305/306 or 34, per sampler id or
// domain-wide; v5 from its header), and bytes and packets are scaled by
// it. Sequence numbers give loss estimates per domain (v5 counts flows,
// v9 packets — times the running flows per packet —, IPFIX records); a
// jump of more than 2^24 or backwards is an exporter restart, not loss.
//
// Flows are aggregated in memory per window (Options.Window, 60 s) into
// rows of (source, destination, protocol, service port) — the service
// port being the lower of the pair — and handed over as one
// sources.FlowWindow per window (none when nothing arrived), then a
// final one at stop; a crash loses at most the window in progress, and
// the next run's first window says it is the first (projections/traffic
// notes the gap). Each window logs the listener's state: datagrams,
// flows, rows, drops by reason, estimated loss, and per exporter its
// versions, domains, templates and sampling.
//
// # Caveats
//
// Memory is bounded: 256 domains per exporter, 1024 templates per
// domain, 8 held data sets (32 KiB) per domain, Options.MaxRows rows per
// window (flows of further rows are counted as table_full). Template
// fields are allocated only after their count is checked against the
// set's length.
//
// # Concurrency
//
// One goroutine reads the socket and decodes under a mutex taken once per
// datagram; Listen's goroutine flushes windows and calls emit. Listen
// closes the socket when ctx ends and returns after the reader is gone.
package flowlistener
