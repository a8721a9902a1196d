// Package scanlog is the scan log's read model (GET /api/scans, the web
// UI's Scans page, the MCP scans tool): one entry per source run —
// sweep, port scan, plugin read, DNS read, flow window — and per run
// that produced nothing (scan.failed), with its times, networks, probes,
// hosts found, rows read, completeness and errors.
//
// # Overview
//
// [Log] is a runner.Projection (name "scanlog", version 2). It reads
// only the header of each run's event: a sweep's responders are counted
// (those it repeats from the previous sweep, in Same, and those it holds
// whole), never resolved against the previous sweep as the inventory
// must; a port scan counts the addresses with an open port; a plugin
// read shows the hosts and rows it read; a DNS read its distinct
// clients and its entries; a flow window the listener's state: its
// exporters as hosts and as its networks, each with its versions,
// templates and sampling ("192.0.2.1 (v9; 5 templates; sampling
// 1:100)"), the datagrams they sent as probes, its flows as rows, and
// among the errors its drops, each reason counted in its own unit
// (datagrams, sets, templates, records or flows: "dropped 3 data sets
// without a template; 2 flow records without addresses"), and its
// estimated loss. The exporters' state is not an error, so a window
// without drops or loss lists none and shows as healthy.
// retention.purged removes the entries that finished before its
// history cutoff (retention.history), and [Log.RowsBefore] counts them
// ahead of a purge for the retention job.
//
// The inventory keeps each source's health (failing, recovered) from the
// same events itself; this package only keeps the entries to show.
//
// # Storage
//
// scanlog.scans: finish time (12 bytes: Unix seconds with the sign bit
// flipped, then nanoseconds) | seq (8) → start time (12) | source length
// (1) | source (at most 255 bytes) | the entry, in a small binary layout
// (rows.go: strings and varints, no reflection: an entry is written on
// every run and read only when listed). scanlog.sweeps: each sweep
// source's last sweep (seq, responders), to check the next one's
// references as the inventory resolves them.
// Finish-time keys make the newest-first listing a reverse cursor walk
// and retention a prefix delete; the header lets a listing filter by
// source and start time without decoding the JSON.
//
// # Concurrency
//
// Apply runs on the runner's goroutine; ListScans and RowsBefore read
// committed rows in their own read transactions. A Log is safe for
// concurrent use.
package scanlog
