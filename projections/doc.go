// Package projections holds the read side of jocasta: the API view types
// (devices, change-log entries, scans, stats, tokens, pages and filters)
// shared by every read model and by the HTTP API, the change-log kind
// constants and the sentinel errors queries return.
//
// # Overview
//
// The read models live in sub-packages, each a projection of the event
// log driven by package runner: inventory (devices, change log, scan
// log, presence clock, retention), access (tokens and accounts), and oui
// (the MAC vendor registry the inventory uses). httpapi, ui and the MCP
// endpoint import this package for types only; they reach the read
// models through interfaces they declare, wired by cmd.
//
// # Caveats
//
// Changes to these types are additive only: they are API version 1.
package projections
