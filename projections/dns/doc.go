// Package dns is the DNS read model: hourly lookup counts per client
// address and domain, with how many the servers blocked and the
// addresses their answers held, built from the query-log plugins'
// dns.read events (sources/dnsnode, sources/dnsfilter1,
// sources/dnsfilter2).
//
// # Overview
//
// [Projection] is a runner.Projection (name "dns", version 1). Each
// dns.read row (hour, client, domain, count, blocked, answers) is added
// to its hour: several servers that answered the same client add up, and
// each server's reads never overlap (its cursor, kept per source in
// dns.sources, is the restart point the readers ask for through
// sources.Env.Cursor). Rows are keyed by client address, not device:
// GET /api/devices/{id}/dns attributes a row to the device that held its
// client address during that hour, from the inventory's address history
// (inventory.HoldingIndex), so lookups of a client the inventory did not
// know yet attach to its device once it appears, and a replay gives the
// same rows. retention.purged with a DNS cutoff deletes the hours before
// it (retention.dns).
//
// # Storage
//
// Names and addresses are kept once, in dictionaries (dns.domains: id →
// name, dns.clients: id → address, both loaded into memory). dns.hours
// holds one value per client and hour, key hour (4 bytes, hours since
// the Unix epoch) | client id (4): the client's lookups of that hour,
// per domain, sorted by domain id, as uvarint(id delta), uvarint(count),
// uvarint(blocked) — typically 4 to 6 bytes per (device, domain, hour)
// row plus the value's share of its key. Hour-major keys make a device's
// range one Get per address and hour, and retention a prefix delete.
// dns.answers: hour | domain id → the distinct answer addresses of that
// domain in that hour (at most 16).
//
// The dictionaries are not purged: a domain or client unseen for longer
// than retention.dns keeps its id (some tens of bytes).
//
// # Concurrency
//
// Apply and Load run on the runner's goroutine and hold the write lock
// while they touch the dictionaries; queries read committed rows in their
// own read transactions and are safe for concurrent use.
package dns
