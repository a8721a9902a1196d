// Package devicesweep is the device sweep: the ICMP sweep of the
// configured networks, the neighbour table, then the name resolvers, into
// one [sources.Sweep]; and a [Scheduler] that runs it on an interval.
//
// # Pipeline
//
//  1. [icmpsweep] probes every address of every network (one socket,
//     paced at Config.Rate, Config.Rounds probes per silent address, then
//     Config.Wait). Before each later round the neighbour table says which
//     on-link addresses deserve another probe: only those whose ARP/NDP
//     resolution completed, because for the others the kernel already sent
//     three ARP requests and another probe would only fill the neighbour
//     table again (the limit that slows on-link sweeps down).
//  2. The neighbour table (package neighbour, netlink) adds the hosts
//     that answered ARP/NDP but dropped ICMP (Via = sources.ViaNeighbour,
//     RTT 0) and, with Config.ResolveMACs, gives every on-link host its
//     MAC; the sweeping host's own addresses get their interface's MAC. A
//     neighbour-only entry whose MAC answered ICMP at another address is
//     left out (what remains of an address change, or a proxy-ARP router).
//  3. Each enricher runs in order (reverse DNS, mDNS, NetBIOS, DNS-SD,
//     SSDP) with the sweep's context; its error is recorded in
//     Sweep.Errors.
//
// Run never converts the result into events: package cmd hands it to
// ingest. Complete is true only when the ICMP sweep ran to the end and the
// context was not cancelled. A host that left the network can linger for
// one sweep as a STALE neighbour entry; see neighbour.Present.
//
// # Logging
//
// The package does not log by itself: Config.Logf and Scheduler.Logf
// receive warnings (a network's size, skipped neighbour entries, skipped
// ticks) for the caller's logger.
//
// # Imports
//
// Besides package sources this package imports the sibling source
// packages icmpsweep and neighbour: it is the pipeline that joins them.
package devicesweep
