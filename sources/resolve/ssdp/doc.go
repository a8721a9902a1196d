// Package ssdp finds UPnP devices with an SSDP search and reads their
// device descriptions (friendlyName, manufacturer, modelName).
//
// The [Resolver] is a [sources.Enricher] that runs last in a sweep. It
// sends one M-SEARCH (ST ssdp:all, MX [Options.MX]) to
// 239.255.255.250:1900 out of every local interface whose prefix holds a
// sweep host, from one ephemeral UDP socket, and collects the unicast
// replies for MX+1 seconds. Replies are deduplicated on LOCATION and USN.
//
// A reply is used only when it comes from one of the sweep's hosts and its
// LOCATION is an http URL whose host is that same address, written as an
// IP literal. A LOCATION that points anywhere else (another address, a
// host name, another scheme) is refused, not fetched, and reported in the
// returned error. The description is fetched with a deadline
// ([Options.Timeout]), no proxy, no keep-alive, and redirects only to the
// same address; at most [Options.MaxDescription] bytes (default 256 KiB)
// are read: a larger description (declared or streamed) is cut, reported
// and not parsed. The XML is matched on local names (namespaces ignored):
// root/device/friendlyName, manufacturer and modelName, each cut to 256
// characters with control characters removed.
//
// Every matched host gets its UPnP description; a host that is still
// unnamed gets Names["ssdp"] = friendlyName.
//
// # Limits
//
// The search listens for MX+1 s (default MX 1, so 2 s) and reads at most
// 4096 replies, keeping at most 1024 distinct ones; at most 4 locations are
// fetched per host, [Options.Concurrency] (default 32) hosts at a time.
// IPv4 only.
package ssdp
