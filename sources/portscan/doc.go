// Package portscan probes TCP ports with plain connects: a completed
// handshake is an open port, a reset or a timeout a closed one.
//
// [Ports] turns scan.ports.custom into a port list (the [Preset] of the
// 100 most common TCP ports when it is empty), with [ParsePorts] giving
// errors that name the item and the fix. [Scan] probes every target on
// those ports plus the ports the device advertises (DNS-SD), with a fixed
// pool of at most Params.Concurrency connections in flight (default 64;
// no goroutine per port) and a deadline per connection (default 1s), and
// returns a [sources.PortScan] whose Open map has every fully probed
// address. Connections that succeed are reset at once (SO_LINGER 0), so
// a scan leaves no TIME_WAIT sockets behind.
//
// See README.md for the preset and where it comes from.
package portscan
