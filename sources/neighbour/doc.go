// Package neighbour reads the kernel's neighbour table (ARP for IPv4, NDP
// for IPv6) over netlink and selects the entries that matter to a device
// sweep.
//
// A host that drops ICMP echo still answers ARP/NDP: when the sweep probes
// it, the kernel resolves its MAC first, and the entry it leaves behind
// proves the host is there. [Present] keeps entries in state REACHABLE,
// STALE, DELAY or PROBE with a MAC, inside the swept prefixes; PERMANENT
// and NOARP entries are configuration, not evidence, and are left out
// (PERMANENT entries still supply MACs through [MACs]). INCOMPLETE and
// FAILED entries never count.
//
// The table is per network namespace: [List] reads the one of the calling
// thread. Entries are only kept for on-link addresses; hosts behind a
// router have no entry and no MAC.
//
// This package imports only the standard library, golang.org/x/sys/unix,
// github.com/vishvananda/netlink and sources/internal/netlinkdump (an
// interrupted netlink dump is read again, as in package arpsweep).
package neighbour
