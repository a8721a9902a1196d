// Package devicesweep is the device sweep: the ARP sweep of the on-link
// IPv4 networks and the ICMP sweep of the others, the neighbour table,
// then the name resolvers, into one [sources.Sweep]; and a [Scheduler]
// that runs it on an interval.
//
// # Pipeline
//
//  1. Each network gets a mode, logged through Config.Log when it
//     changes. An IPv4 network that lies wholly inside the subnet of an
//     up, ARP-using interface is swept by [arpsweep] when its packet
//     socket opens (CAP_NET_RAW): our own ARP requests, at Config.Rate,
//     Config.Rounds per silent address, then Config.Wait. Every host that
//     answers is present (Via = sources.ViaARP) with the MAC it answered
//     from, the host that drops ICMP included; each is sent ICMP echo as
//     soon as it answers, from a few sockets of its own, so the hosts that
//     answer echo get an RTT (the echoes end with the sweep). No kernel
//     neighbour entry is needed, so the sweep runs at the rate, not at the
//     speed of the neighbour table.
//  2. The other networks (routed, IPv6, no CAP_NET_RAW, Config.DisableARP)
//     are swept by [icmpsweep], side by side with the ARP sweep; the two
//     share Config.Rate in proportion to their addresses. Before each
//     later ICMP round the neighbour table says which on-link addresses
//     deserve another probe: only those whose ARP/NDP resolution
//     completed, because for the others the kernel already sent three ARP
//     requests and another probe would only fill the neighbour table
//     again (the limit that slows on-link ICMP sweeps down).
//  3. The neighbour table (package neighbour, netlink) adds the hosts
//     that answered ARP/NDP but dropped ICMP (Via = sources.ViaNeighbour,
//     RTT 0) and, with Config.ResolveMACs, gives every on-link host found
//     by ICMP its MAC; the sweeping host's own addresses get their
//     interface's MAC. A neighbour-only entry whose MAC answered at
//     another address is left out (what remains of an address change, or
//     a proxy-ARP router), and so is one inside an ARP-swept network that
//     the kernel has not confirmed since the sweep began (the address did
//     not answer our ARP requests).
//  4. Each enricher runs in order (reverse DNS, mDNS, NetBIOS, DNS-SD,
//     SSDP) with the sweep's context; its error is recorded in
//     Sweep.Errors.
//
// Sweep.ProbesSent counts the ARP requests, the echo requests to ARP
// responders and the ICMP probes really sent.
//
// Run never converts the result into events: package cmd hands it to
// ingest. Complete is true only when the ARP and ICMP sweeps ran to the
// end and the context was not cancelled. In an ICMP-swept network a host
// that left can linger for one sweep as a STALE neighbour entry; see
// neighbour.Present.
//
// # Logging
//
// The package does not log by itself: Config.Log (a *slog.Logger, which
// serve bridges to its zerolog logger) receives each network's sweep mode
// and warnings (a network's size, skipped neighbour entries, an address
// answering ARP from two MACs); the scheduler (sources/scheduler) logs
// skipped ticks.
//
// # Imports
//
// Besides package sources this package imports the sibling source
// packages arpsweep, icmpsweep and neighbour: it is the pipeline that
// joins them.
package devicesweep
