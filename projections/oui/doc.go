// Package oui maps hardware (MAC) addresses to the organisation the IEEE
// assigned their prefix to, offline.
//
// The data is the IEEE registry of MA-L (24-bit), MA-M (28-bit) and MA-S
// (36-bit) assignments. It is not hand-copied: the generator in gen/
// converts the npm package oui-data, pinned to an exact version, into
// data/oui.tsv.gz at build time (see data/README.md), and this package
// embeds the data directory. The generated file is not committed, so the
// package compiles without it; [Load] then returns an empty registry and
// [ErrNoData], and the caller logs a warning.
//
// [Registry.Lookup] tries the longest prefix first (MA-S, then MA-M, then
// MA-L), so a block the IEEE sub-assigns resolves to the sub-assignee
// rather than to "IEEE Registration Authority". Locally administered
// addresses (bit 0x02 of the first octet set: randomised addresses of
// phones and laptops, virtual machines, containers) carry no vendor by
// definition; Lookup returns "" for them and [Random] reports them.
//
// Memory: the table is three sorted slices of (prefix, name index) pairs
// (uint32 prefixes for MA-L and MA-M, uint64 for MA-S) and one string
// arena holding each distinct organisation name once (30,665 names for
// 53,730 prefixes). A loaded registry of oui-data 2.1.9 retains about
// 1.4 MB of heap; parsing peaks near 7 MB of short-lived heap at start-up.
// TestRegistryHeap logs and bounds the figure, BenchmarkLoad reports it.
// A Registry is immutable and safe for concurrent use: load it once at
// start-up and share it. The package keeps no global state; every Load
// parses the embedded file again.
package oui
