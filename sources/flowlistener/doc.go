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
// bounded, for at most a minute: older ones are dropped as no_template)
// and decoded when it comes. Options templates give the
// sampling interval (v9 34/50, IPFIX 305/306 or 34, per sampler id or
// domain-wide; v5 from its header), and bytes and packets are scaled by
// it. Sequence numbers give loss estimates per domain (v5 counts flows,
// v9 packets — times the running flows per packet —, IPFIX records),
// counting only each message's own records (held ones decoded later
// belong to the message that brought them). A step back of at most 2^16
// flows (v5, IPFIX) or 1024 packets (v9) is a late datagram: the
// expected number stays and the loss counted for it in this window is
// taken back; a jump forward of more than 2^24, or back further, is an
// exporter restart, not loss. A record of a template with both IPv4 and
// IPv6 fields takes the family whose source and destination are both set
// and specified (IPv4 when both are); 0.0.0.0 and :: count as absent
// (in v5 too), and a record with neither family, or with an IPv4-mapped
// address facing a native IPv6 one, is dropped (no_address).
//
// Flows are aggregated in memory per window (Options.Window, 60 s) into
// rows of (source, destination, protocol, service port) — the service
// port being the lower of the pair — and handed over as one
// sources.FlowWindow per window (none when nothing arrived), then a
// final one at stop; a crash loses at most the window in progress, and
// the next run's first window says it is the first (projections/traffic
// notes the gap). Each window logs the listener's state: datagrams,
// flows, rows, drops by reason, estimated loss, restarts, and per
// exporter heard from in the window its versions, domains, templates,
// loss, restarts, held data sets and sampling (restarts and held sets
// are in the log only: sources.FlowExporter has no field for them).
//
// # Caveats
//
// Memory is bounded: 256 domains per exporter, 1024 templates per
// domain, 256 fields per template, 65,536 template fields per exporter
// (each template counting 4 more), 8 held data sets (32 KiB) per domain,
// Options.MaxRows rows per window (flows of further rows are counted as
// table_full); templates and domains refused for these limits are
// counted as limits. Template fields are read into a reused buffer and
// copied only for a new or changed template, so a refresh allocates
// nothing and a hostile field count allocates nothing at all.
//
// An exporter that restarts before it has sent 2^16 flows (v5, IPFIX) or
// 1024 packets (v9) looks like late datagrams, not a restart: loss is
// not counted (beyond taking back this window's) until its sequence
// passes the expected number again.
//
// # Concurrency
//
// One goroutine reads the socket and decodes under a mutex taken once per
// datagram; Listen's goroutine flushes windows and calls emit. Listen
// closes the socket when ctx ends and returns after the reader is gone.
package flowlistener
