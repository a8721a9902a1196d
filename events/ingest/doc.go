// Package ingest turns what the sources observed into events and appends
// them to the log: one sweep.completed per device sweep, one
// portscan.completed per port scan.
//
// # Overview
//
// The conversion ([SweepEvent], [PortScanEvent]) is pure and keeps the event
// compact: one event per run, not one per host. [Ingestor] appends it
// durably; what changed for each device is decided later, in log order, by
// the inventory projection, so a replay always reaches the same decisions.
package ingest
