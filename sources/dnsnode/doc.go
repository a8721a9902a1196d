// Package dnsnode is the dnsnode source kind: a DNS server node
// (Technitium DNS Server, see ../shared/reference/dnsnode.md) whose query
// log is read (plugins.dnsnode.<instance>).
//
// # Overview
//
// [Reader] is a sources.Poller. With an API token (Authorization:
// Bearer) it lists the installed apps once and picks the one whose log
// it reads: log_app when set (by its name on the apps page, case aside),
// else the only app that can be queried (isQueryLogs; a logger such as
// Log Exporter cannot). Each read pages /api/logs/query newest first,
// from a second before its cursor, down to the cursor, and aggregates
// the entries into hourly rows per client and domain
// (sources.DNSAggregator) with the answer addresses; Blocked,
// UpstreamBlocked and CacheBlocked responses count as blocked. The
// result is a sources.DNSRead with the new cursor (sources.DNSMark: the
// newest entry's time and the keys of the entries at that time, as the
// log has no stable ids); the log keeps it and a restart continues from
// it (sources.Env.Cursor). A first read back-fills what the server holds,
// bounded by retention.dns and by DNSReaderOptions.MaxEntries.
//
// # Caveats
//
//   - Every reply is HTTP 200 with a status: errors are read from it
//     ("invalid-token": the token is refused).
//   - rowNumber is not stable: when queries arrive between two pages,
//     rows shift and a page repeats the end of the one before; the read
//     skips entries at or above the oldest one it counted.
//   - Past the last page the server answers the last page again: paging
//     stops at totalPages.
//   - Times are ISO 8601; one with an offset (a server writing its own
//     zone) is converted, one with no zone is UTC, as the server takes
//     its start parameter.
//   - A read cut short fails whole (scan.failed): its cursor does not
//     move. Near its timeout a read stops asking for pages and keeps what
//     it has, saying so in its errors.
package dnsnode
