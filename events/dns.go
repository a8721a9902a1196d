package events

import "time"

// KindDNSRead records one read of a DNS server's query log (the dnsnode,
// dnsfilter1 and dnsfilter2 plugins): the queries since the previous
// read aggregated into hourly rows per client and domain, and the
// source's new cursor. One event per read per server, never one per
// query; short keys keep it compact.
const KindDNSRead = "dns.read"

// DNSRead is the payload of dns.read.
type DNSRead struct {
	ScanID   string    `json:"scan_id"`
	Kind     string    `json:"kind"` // the source kind: "dnsnode", "dnsfilter1", "dnsfilter2"
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Complete bool      `json:"complete"`
	Errors   []string  `json:"errors,omitempty"`
	// Cursor is the source's restart point after this read (opaque to
	// all but its kind): a restart continues from the newest one.
	Cursor string `json:"cursor,omitempty"`
	// Entries is the number of query-log entries counted, Skipped those
	// left out (no client or question, already counted).
	Entries int `json:"entries"`
	Skipped int `json:"skipped,omitempty"`
	// Rows are the lookups of each client in each hour, sorted by hour
	// and client, each with its lookups sorted by domain.
	Rows []DNSRow `json:"rows,omitempty"`
}

// DNSRow is the lookups of one client within one hour.
type DNSRow struct {
	// Hour is the hour's start, in Unix seconds.
	Hour    int64       `json:"h"`
	Client  string      `json:"c"`
	Lookups []DNSLookup `json:"l"`
}

// DNSLookup is a client's lookups of one domain within the row's hour.
type DNSLookup struct {
	Domain string `json:"d"`
	// Count queries, Blocked of them blocked by the server.
	Count   uint32 `json:"n"`
	Blocked uint32 `json:"b,omitempty"`
	// Answers are the distinct addresses the answers held.
	Answers []string `json:"a,omitempty"`
}
