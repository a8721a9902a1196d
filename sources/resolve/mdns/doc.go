// Package mdns names devices by asking them over Multicast DNS (RFC 6762)
// for the PTR record of their reverse name.
//
// The [Resolver] is a [sources.Enricher] that runs second in a sweep and
// only asks hosts that reverse DNS did not name. Per host it opens an
// ephemeral, unconnected UDP socket (never port 5353, so responders treat it
// as a one-shot "legacy" querier and answer unicast to that port) and sends
// two queries for "<reversed ip>.in-addr.arpa. PTR" (ip6.arpa for IPv6):
//
//   - a unicast query to host:5353 (RFC 6762 §5.5), and
//   - a QU query (qclass 0x8001, RFC 6762 §5.4) to 224.0.0.251:5353
//     (ff02::fb for IPv6), sent out of the interface whose prefix holds the
//     host, with IP TTL 255.
//
// The socket must stay unconnected: a connected socket (as miekg/dns
// Client.Exchange uses) would drop a reply that comes from another address
// or port than the one it was sent to.
//
// Replies are accepted only from on-link sources (an address inside a
// prefix of a local interface, or IPv6 link-local), and only when they are
// DNS responses that carry a PTR record for exactly the asked name; the
// cache-flush bit (top bit of the class) is masked. The first good answer
// wins and the name is stored without its trailing dot, "printer.local."
// becoming "printer.local": the .local suffix stays, so the name says where
// it came from and never collides with a unicast DNS name.
//
// Hosts that are not on a local link are skipped: their mDNS replies could
// not be trusted and multicast would not reach them.
//
// # Limits
//
// Each host is given [Options.Timeout] (default 1s) for an answer to both
// queries; at most [Options.Concurrency] hosts (default 32) are asked at
// once. Silent hosts are not errors. Local failures (sockets, both sends
// failing) and malformed replies are summarised in one returned error.
package mdns
