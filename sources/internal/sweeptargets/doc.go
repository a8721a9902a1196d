// Package sweeptargets walks the addresses of the prefixes a sweep covers
// without listing them, for the ICMP and the ARP sweeps.
//
// # Overview
//
// A [Block] is one prefix: its addresses are the network address plus an
// offset in [Block.First, Block.End), so a /8 costs no more memory than a
// /30 until something answers. The caller decides First and End: the ICMP
// sweep leaves out an IPv4 subnet's network and broadcast addresses (and
// IPv6's subnet-router anycast address), the ARP sweep those of the subnet
// of the address it sends from. [Nest] orders a sweep's blocks most
// specific first and tells each block which more specific blocks lie
// inside it, so that an address in two prefixes is walked once, by the
// most specific block that walks it ([Block.Skip]). [Bits] is the per
// address state (asked, answered): one bit per offset.
//
// # Concurrency
//
// A Block is read-only once [Nest] has run and may be shared by any number
// of goroutines. Bits may be read and set from any goroutine.
package sweeptargets
