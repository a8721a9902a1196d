// Package dnsfilter2 is the dnsfilter2 source kind: a second DNS
// filtering server (AdGuard Home, see ../shared/reference/dnsfilter2.md)
// whose query log is read (plugins.dnsfilter2.<instance>).
//
// # Overview
//
// [Reader] is a sources.Poller. HTTP Basic goes with every call (no
// session is held; none without a user). Each read pages
// GET /control/querylog backwards from the newest entry, passing the
// reply's oldest back verbatim as older_than, until an entry at or below
// its cursor, the back-fill bound (retention.dns), its bound of entries,
// or an empty oldest (the end of the log). An empty page with an oldest
// only means that window of the log had no match: paging goes on.
// Entries are aggregated into hourly rows per client and domain with
// their A and AAAA answers (sources.DNSAggregator); the Filtered*
// reasons that block (black list, safe browsing, parental, invalid,
// blocked service) count as blocked. The cursor (sources.DNSMark) is the
// newest entry's time, nanoseconds included, and the keys of the entries
// at that time, as the log has no ids.
//
// # Caveats
//
//   - Times carry the server's zone offset and nine fractional digits;
//     they are kept in UTC.
//   - 401 has no body and error bodies are plain text: the reader says
//     what they mean (login refused, rate-limited after failed logins).
//   - A read cut short fails whole: its cursor does not move.
//   - A page is read by a small scanner (scan.go) that takes the fields
//     the reader needs and skips the rest without encoding/json's
//     validation of every skipped byte; anything it does not take as
//     plainly valid is decoded by encoding/json instead, and a fuzz
//     target checks that both read the same.
package dnsfilter2
