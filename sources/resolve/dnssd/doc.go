// Package dnssd discovers the services devices advertise over DNS-SD on
// Multicast DNS (RFC 6763 on RFC 6762) and names devices after them.
//
// The [Resolver] is a [sources.Enricher] that runs fourth in a sweep. It
// opens one ephemeral, unconnected UDP socket and works in rounds; each
// round sends QU queries (qclass 0x8001) to 224.0.0.251:5353 out of every
// local interface whose prefix holds a sweep host, then listens for one
// window ([Options.Timeout]) and merges every answer it hears:
//
//  1. service type enumeration: PTR _services._dns-sd._udp.local.;
//  2. browse: PTR <type>.local. for every type found (at most
//     [Options.MaxTypes]);
//  3. resolve, only when needed: SRV for instances whose SRV has not been
//     heard yet and A for SRV targets without an address.
//
// Because the source port is not 5353, responders treat the queries as
// one-shot ("legacy") queries and answer unicast to the socket, usually
// with the SRV, TXT and address records in the same packet, so round 3 is
// mostly skipped. Records are read from every section; the cache-flush bit
// is masked; only class IN counts.
//
// Replies are accepted only from on-link sources (inside the prefix of a
// local interface). An instance is mapped to a sweep host by the A/AAAA
// records of its SRV target, or, when none was heard, by the address that
// sent its SRV record. Each mapped host gets a [sources.Service] (instance
// name unescaped: "Living Room.TV" stays one name, type "_http._tcp",
// port); a host that is still unnamed gets Names["dnssd"] = the first of its
// instance names in sorted order. Instances without an SRV record (no port)
// are not recorded.
//
// # Limits
//
// Every round listens for exactly [Options.Timeout] (default 1s), so an
// Enrich takes two or three windows. At most [Options.MaxTypes] types
// (default 64) and [Options.MaxInstances] instances (default 512) are kept,
// at most 256 resolve queries are sent, and at most 4096 packets are read
// per round; replies past these caps are ignored. Malformed replies are
// summarised in the returned error. There is no concurrency setting: the
// queries of a round go out together from one socket. IPv4 only: IPv6
// hosts are matched by AAAA records but no query goes to ff02::fb.
package dnssd
