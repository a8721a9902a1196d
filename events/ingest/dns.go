package ingest

import (
	"fmt"
	"net/netip"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/sources"
)

// DNSEvent converts one read of a DNS server's query log into dns.read.
// Rows keep the reader's order (sorted), grouped by hour and client, so
// equal reads give equal bytes.
func DNSEvent(r *sources.DNSRead, kind, source string) (events.Envelope, error) {
	p := events.DNSRead{
		ScanID:   r.ScanID,
		Kind:     kind,
		Started:  r.Started.UTC(),
		Finished: r.Finished.UTC(),
		Complete: r.Complete,
		Errors:   r.Errors,
		Cursor:   r.Cursor,
		Entries:  r.Entries,
		Skipped:  r.Skipped,
		Rows:     []events.DNSRow{},
	}
	// The reader's rows are sorted by (hour, client, domain): each run of
	// one hour and client is one row of the event.
	for _, row := range r.Rows {
		if !row.Client.IsValid() || row.Domain == "" {
			continue
		}
		h, c := row.Hour.Unix(), row.Client.String()
		if n := len(p.Rows); n == 0 || p.Rows[n-1].Hour != h || p.Rows[n-1].Client != c {
			p.Rows = append(p.Rows, events.DNSRow{Hour: h, Client: c})
		}
		l := events.DNSLookup{Domain: row.Domain, Count: row.Count, Blocked: row.Blocked}
		if len(row.Answers) > 0 {
			l.Answers = addrs(row.Answers)
		}
		last := &p.Rows[len(p.Rows)-1]
		last.Lookups = append(last.Lookups, l)
	}
	e, err := events.New(events.KindDNSRead, p, r.Finished)
	if err != nil {
		return events.Envelope{}, fmt.Errorf("ingest: dns read %s: %w", r.ScanID, err)
	}
	e.Source, e.Actor, e.Stream = source, source, "scan/"+r.ScanID
	return e, nil
}

func addrs(as []netip.Addr) []string {
	out := make([]string, 0, len(as))
	for _, a := range as {
		out = append(out, a.String())
	}
	return out
}
