package inventory

import (
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// A DNS read is a scan: its entries are its rows, its clients the hosts
// found; the source's health follows its reads; it makes no device.
func TestDNSReadScanRow(t *testing.T) {
	h := newHarness(t, Options{})
	p := events.DNSRead{ScanID: "d1", Kind: "dnsfilter1", Started: t0, Finished: t0.Add(time.Second), Complete: true, Entries: 40,
		Rows: []events.DNSRow{
			{Hour: t0.Unix() - 3600, Client: "10.0.0.5", Lookups: []events.DNSLookup{{Domain: "a.example", Count: 20}}},
			{Hour: t0.Unix(), Client: "10.0.0.5", Lookups: []events.DNSLookup{{Domain: "a.example", Count: 10}, {Domain: "b.example", Count: 5}}},
			{Hour: t0.Unix(), Client: "10.0.0.6", Lookups: []events.DNSLookup{{Domain: "a.example", Count: 5}}},
		}}
	h.applyEv(h.envelope(events.KindDNSRead, p, p.Finished, "dnsfilter1:pi", "dnsfilter1:pi", ""))
	sc, err := h.scans.ListScans(t.Context(), projections.ScanFilter{Limit: 10})
	if err != nil || len(sc.Items) != 1 {
		t.Fatalf("%v %v", sc, err)
	}
	s := sc.Items[0]
	if s.Kind != "dnsfilter1" || s.Source != "dnsfilter1:pi" || s.ID != "d1" || s.HostsFound != 2 || s.Rows != 40 || !s.Complete || len(s.Errors) != 0 {
		t.Fatalf("%s", js(s))
	}
	if len(h.inv.devs) != 0 {
		t.Error("a DNS read made devices")
	}
	hl := h.inv.health["dnsfilter1:pi"]
	if hl == nil || hl.Kind != "dnsfilter1" || !hl.LastComplete.Equal(t0) || hl.FailingSince != nil {
		t.Fatalf("health after a complete read: %+v", hl)
	}
	// An incomplete read marks the source failing with its reason.
	p2 := p
	p2.ScanID, p2.Complete, p2.Errors, p2.Started, p2.Finished = "d2", false, []string{"queries: HTTP 500"}, t0.Add(time.Minute), t0.Add(61*time.Second)
	h.applyEv(h.envelope(events.KindDNSRead, p2, p2.Finished, "dnsfilter1:pi", "dnsfilter1:pi", ""))
	if hl := h.inv.health["dnsfilter1:pi"]; hl.FailingSince == nil || !hl.FailingSince.Equal(p2.Finished) || hl.Reason != "queries: HTTP 500" {
		t.Fatalf("health after an incomplete read: %+v", hl)
	}
}
