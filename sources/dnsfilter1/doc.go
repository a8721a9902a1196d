// Package dnsfilter1 is the dnsfilter1 source kind: a DNS filtering
// server of version 6 of its product line (Pi-hole v6, see
// ../shared/reference/dnsfilter1.md) whose query log is read
// (plugins.dnsfilter1.<instance>).
//
// # Overview
//
// [Reader] is a sources.Poller. Each read signs in with the app password
// (POST /api/auth; none for a server with no password set), reads
// GET /api/queries from its cursor's time (from=), newest first, paging
// with start= under the cursor (largest id) the first page returned, down
// to the newest id it counted before, and signs out (DELETE /api/auth),
// so that it never holds one of the server's API session seats between
// reads. Entries are aggregated into hourly rows per client and domain
// (sources.DNSAggregator); the gravity, regex and deny-list statuses,
// their CNAME variants, upstream blocking and special domains count as
// blocked. Pi-hole's log has no answer addresses. The cursor
// (sources.DNSMark) is the newest id and its time; a restart continues
// from the one the log holds (sources.Env.Cursor). A first read
// back-fills what the server holds in memory, bounded by retention.dns
// and DNSReaderOptions.MaxEntries.
//
// # Caveats
//
//   - Every seat taken: 429 (some builds 401) with key
//     api_seats_exceeded, reported as such with what to do.
//   - A privacy level that hides every query answers cursor null: a
//     complete read of nothing, with a note.
//   - Ids that start again (a replaced database) are noticed when the
//     server's largest id is below the cursor's: the time alone then
//     tells what was counted.
//   - The sid is sent in the X-FTL-SID header, never in the URL, and the
//     password never appears in an error.
package dnsfilter1
