package inventory

import (
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// dnsReadHead is the part of a dns.read the inventory reads: the read's
// facts for the scan log and the source's health, and the rows' clients
// only (the lookups are the DNS projection's).
type dnsReadHead struct {
	ScanID   string    `json:"scan_id"`
	Kind     string    `json:"kind"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Complete bool      `json:"complete"`
	Errors   []string  `json:"errors"`
	Entries  int       `json:"entries"`
	Rows     []struct {
		Client string `json:"c"`
	} `json:"rows"`
}

// dnsReadPrep is a dns.read decoded ahead of Apply, with its scan-log row.
type dnsReadPrep struct {
	src, kind     string
	start, fin    time.Time
	complete      bool
	reason        string
	scanKey, scan []byte
}

// prepareDNSRead decodes a dns.read and encodes its scan-log row: the
// read's entries as its rows, its distinct clients as the hosts found.
func prepareDNSRead(ev events.Envelope, h *dnsReadHead) *dnsReadPrep {
	p := &dnsReadPrep{src: ev.Source, kind: h.Kind, start: h.Started.UTC(), fin: h.Finished.UTC(), complete: h.Complete}
	if h.Finished.IsZero() {
		p.fin = ev.Time.UTC()
	}
	if h.Started.IsZero() {
		p.start = p.fin
	}
	if !h.Complete {
		p.reason = "incomplete read"
		if len(h.Errors) > 0 {
			p.reason = h.Errors[0]
		}
	}
	clients := make(map[string]struct{}, 16)
	for _, r := range h.Rows {
		clients[r.Client] = struct{}{}
	}
	id := h.ScanID
	if id == "" {
		id = ev.ID
	}
	p.scanKey, p.scan = scanRow(ev.Seq, projections.Scan{
		ID: id, Source: ev.Source, Kind: h.Kind, Started: p.start, Finished: p.fin,
		DurationMS: p.fin.Sub(p.start).Milliseconds(), Networks: []string{}, HostsFound: len(clients), Rows: h.Entries,
		Complete: h.Complete, Errors: nonNil(h.Errors),
	})
	return p
}

// applyDNSRead writes the read's scan-log row and the source's health: a
// DNS server sights no device (its lookups say nothing of presence), but
// a failing one is shown as failing like every other source.
func (i *Inventory) applyDNSRead(em *emitter, p *dnsReadPrep) error {
	if err := em.put(bucketScans, p.scanKey, p.scan); err != nil {
		return err
	}
	if p.complete {
		i.sourceDone(p.src, p.kind, p.start)
	} else {
		i.sourceFailing(p.src, p.kind, p.fin, p.reason)
	}
	return nil
}
