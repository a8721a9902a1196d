// Package netbios names devices from their NetBIOS node status (RFC 1002
// NBSTAT, UDP port 137).
//
// The [Resolver] is a [sources.Enricher] that runs third in a sweep: it only
// asks hosts that neither reverse DNS nor mDNS named. For each one it sends
// the 50-byte node status request for the wildcard name "*" from an
// ephemeral, unconnected UDP socket to ip:137 and waits for one reply from
// that address. The unique name with suffix 0x00 is the computer name
// (recorded as Names["netbios"]); [Resolver.Lookup] also returns the
// workgroup, every registered name and the unit id (MAC), which the sweep
// does not use: the sweep's MAC comes from the neighbour table.
//
// The response parser ([ParseNodeStatus]) is pure, bounds-checks every
// length the reply claims and is fuzzed.
//
// # Limits
//
// Every query waits at most [Options.Timeout] (default 1s) and at most
// [Options.Concurrency] queries (default 32) are in flight. A host that does
// not answer is simply unnamed; only local failures (sockets) and malformed
// replies are reported, summarised in one error. NetBIOS is IPv4 only; IPv6
// hosts are skipped.
package netbios
