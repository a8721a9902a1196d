// Package sources is the contract between jocasta and everything that
// observes the network: the device sweep (ICMP, neighbour table and the
// name resolvers), the port scan, and later the plugins.
//
// # Overview
//
// A source returns typed observations ([Sweep], [PortScan]); it never sees
// events, the store or HTTP. package cmd hands each result to the ingest
// step, which turns it into one event in the log.
//
// Name resolvers are [Enricher]s: each adds what it learns (names, services,
// UPnP descriptions) to the hosts a sweep found, in the order the contract
// gives: reverse DNS, mDNS, NetBIOS, DNS-SD, SSDP.
//
// # Concurrency
//
// Every method takes a context and returns promptly when it is cancelled,
// with what it has so far and ctx.Err(). Implementations may run queries
// concurrently inside one call but leave no goroutine behind on return.
//
// This package imports only the standard library.
package sources
