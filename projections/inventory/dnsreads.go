package inventory

import (
	"time"

	"github.com/jocasta/jocasta/events"
)

// dnsReadHead is the part of a dns.read the inventory reads: whether the
// read worked, for the source's health (the lookups are the DNS
// projection's, the read's entry projections/scanlog's).
type dnsReadHead struct {
	Kind     string    `json:"kind"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Complete bool      `json:"complete"`
	Errors   []string  `json:"errors"`
}

// dnsReadPrep is a dns.read decoded ahead of Apply.
type dnsReadPrep struct {
	src, kind  string
	start, fin time.Time
	complete   bool
	reason     string
}

// prepareDNSRead decodes a dns.read's outcome.
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
	return p
}

// applyDNSRead keeps the source's health: a DNS server sights no device
// (its lookups say nothing of presence), but a failing one is shown as
// failing like every other source.
func (i *Inventory) applyDNSRead(_ *emitter, p *dnsReadPrep) error {
	if p.complete {
		i.sourceDone(p.src, p.kind, p.start)
	} else {
		i.sourceFailing(p.src, p.kind, p.fin, p.reason)
	}
	return nil
}
