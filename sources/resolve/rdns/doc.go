// Package rdns names devices by reverse DNS: a PTR query for every host of
// a sweep, sent to the system's resolvers with miekg/dns.
//
// The [Resolver] is a [sources.Enricher] and runs first in a sweep. For each
// host it asks for the PTR record of the host's reverse name (in-addr.arpa
// or ip6.arpa, recursion desired) and records the target, without its
// trailing dot, as Names["dns"]. CNAME chains inside the answer (RFC 2317
// classless delegation) are followed; when several PTR records answer, the
// alphabetically first is taken so the name is stable across sweeps. Names
// keep miekg/dns presentation escapes (a space is "\ ", odd bytes "\DDD"),
// so a hostile PTR cannot smuggle control characters.
//
// Servers are tried in order: an answer (NOERROR) or NXDOMAIN ends the
// lookup, NXDOMAIN meaning "no name", which is not an error. SERVFAIL,
// REFUSED, other codes and timeouts move on to the next server; a lookup
// that every server failed is counted, and Enrich returns one error that
// summarises the failures. A truncated UDP answer without a PTR is retried
// over TCP on the same server.
//
// # Limits
//
// Each query (one server, one host) waits at most [Options.Timeout]
// (default 1s); at most [Options.Concurrency] hosts (default 32) are looked
// up at once. Without [Options.Servers] the resolvers are read from
// /etc/resolv.conf at every Enrich, so a changed file is picked up.
package rdns
