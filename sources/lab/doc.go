// Package lab builds a small network of Linux network namespaces with real
// responders, for tests of the device sweep, the port scan and the name
// resolvers, and for manual use through lab.sh.
//
// # Topology
//
// A lab named "jl1a2b3c" (random, so parallel labs never collide) is:
//
//   - jl1a2b3c-br: a namespace holding only the bridge br0 and one veth
//     port per node. Nothing links it to the host's own namespace: no veth
//     into the root namespace, no route out.
//   - jl1a2b3c-scanner: the scanner, at Spec.Scanner; /etc/netns/<ns>/
//     resolv.conf points at the lab's dnsmasq.
//   - jl1a2b3c-dns: dnsmasq at Spec.DNS, serving an A and a PTR record for
//     every HostSpec.DNSName.
//   - jl1a2b3c-<host>: one namespace per HostSpec with eth0 on the bridge,
//     lo up, net.ipv4.ping_group_range "0 2147483647" (a new namespace
//     starts at "1 0": nobody may use ping sockets) and a multicast route
//     224.0.0.0/4 on eth0, running the responders the spec asks for:
//     avahi-daemon (host name, reverse PTR, one DNS-SD service), nmbd
//     (NetBIOS name), minidlnad (SSDP and a UPnP description on :8200),
//     a perl-base listener for plain TCP ports, and
//     net.ipv4.icmp_echo_ignore_all=1 for hosts that drop ICMP.
//
// [Build] waits until every responder answers from the scanner namespace
// (DNS query, mDNS legacy-unicast query, NetBIOS node status, HTTP GET,
// TCP connect), and [Lab.Close] stops the responders, deletes the
// namespaces and removes /etc/netns/<scanner> and the lab's temp dir.
//
// # In tests
//
// [New] builds a lab for one test and registers Close with t.Cleanup, so
// the lab goes away even when the test fails. [Require] skips the test with
// a loud reason without root or the Debian packages, and fails it when
// CI=true. Code that must run with the scanner's view of the network uses
// [Lab.InScanner] (the test re-runs itself inside the scanner namespace)
// or [Lab.Do] (one OS thread enters the namespace to open sockets).
//
// Only the standard library is imported.
package lab
