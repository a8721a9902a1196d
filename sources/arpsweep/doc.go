// Package arpsweep finds the hosts of on-link IPv4 networks by sending
// its own ARP who-has requests and collecting the replies (IP → MAC).
//
// # Why
//
// An ICMP sweep of an on-link network makes the kernel resolve every
// address first: each probe to a silent address holds a neighbour-table
// entry for about 3 s while the kernel sends three ARP requests, and past
// net.ipv4.neigh.default.gc_thresh3 sendto fails with ENOBUFS. A sweep
// that sends the ARP requests itself, from a packet socket, never touches
// the neighbour table: it runs at the configured rate, and it also finds
// hosts that drop ICMP (every IPv4 host must answer ARP).
//
// # Sockets and privileges
//
// [Open] opens one AF_PACKET/SOCK_RAW socket per link, bound to the
// interface and to ETH_P_ARP, with a classic BPF filter that passes ARP
// replies only (the requests every host broadcasts never wake the
// reader). That needs CAP_NET_RAW; without it Open fails with an error
// wrapping [ErrNotPermitted], and the caller sweeps with ICMP instead.
// Frames are built and parsed with gopacket's layers.Ethernet and
// layers.ARP (no cgo, no pcap): a request is serialized once per sender
// and only its target address changes per request, and replies go
// through a DecodingLayerParser into reused layers, so neither path
// allocates per frame (BenchmarkSweepFake, BenchmarkHandleReply).
//
// # Which networks
//
// [Links] lists the interfaces that are up and use ARP (a 48-bit MAC; not
// loopback, point-to-point or NOARP) with their IPv4 addresses.
// [TargetFor] sweeps a prefix through a link only when the whole prefix
// lies inside the subnet of one of the link's addresses; that address is
// the sender of the requests. A prefix only partly on a link, behind a
// router, or IPv6 has no target.
//
// # Pacing
//
// [Sweeper.Sweep] works like the ICMP sweep, with the same code
// (sources/internal/sweeptargets and sources/internal/sweeprun): addresses
// are walked lazily (two bits per address: asked, answered), requests
// leave through a golang.org/x/time/rate token bucket at Params.Rate per
// second, round r asks every address that has not answered yet, rounds
// start at least min(Wait, 1s) apart, and after the last request the
// sweep waits Params.Wait (less when every address answered). ENOBUFS is
// back-pressure (pause, send again, count only what was sent).
//
// # What counts as an answer
//
// A frame is recorded only when it is an ARP reply (operation 2, IPv4
// over Ethernet) received on the link the request left from, addressed to
// this host (packet type HOST or BROADCAST: not looped back, not seen in
// promiscuous mode), whose sender MAC and Ethernet source are unicast and
// not zero, whose sender MAC is not the link's own, whose sender address
// was asked in this sweep and whose target address is the address the
// request came from. Gratuitous replies (sender address = target address)
// and everything else are counted in Result.Ignored. An address that
// answers from two MACs keeps the first and gets a warning. The link's
// own addresses are reported at once with the link's MAC (Reply.Local):
// nothing answers a host's requests for itself. The subnet's network and
// broadcast addresses are never asked.
//
// Params.Found hears of each responder as it is found, so that a caller
// can follow up (the device sweep sends ICMP echo to responders for
// their round-trip time) while the sweep goes on.
//
// This package imports only the standard library, golang.org/x/sys,
// golang.org/x/net/bpf, github.com/vishvananda/netlink and the sweep
// helpers under sources/internal (which use golang.org/x/time).
package arpsweep
