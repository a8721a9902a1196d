package ingest

import (
	"net/netip"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/sources"
)

func TestDNSReadEvent(t *testing.T) {
	at := time.Date(2026, 5, 1, 10, 1, 0, 0, time.FixedZone("x", 3600))
	hour := time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)
	r := &sources.DNSRead{
		ScanID: "7-1", Started: at.Add(-time.Second), Finished: at, Complete: true, Cursor: "v1 1 2 ", Entries: 3, Skipped: 1,
		Rows: []sources.DNSRow{
			{Hour: hour, Client: netip.MustParseAddr("192.0.2.50"), Domain: "example.com", Count: 2, Answers: []netip.Addr{netip.MustParseAddr("2001:db8::1")}},
			{Hour: hour, Client: netip.MustParseAddr("192.0.2.50"), Domain: "z.example", Count: 1},
			{Hour: hour, Client: netip.MustParseAddr("192.0.2.51"), Domain: "ads.example.net", Count: 1, Blocked: 1},
			{Hour: hour, Domain: "no-client.example", Count: 1}, // skipped
		},
	}
	e, err := RunEvent(sources.Run{Instance: sources.Instance{Source: "dnsfilter1:pi", Kind: "dnsfilter1"}, Result: r})
	if err != nil {
		t.Fatal(err)
	}
	if e.Kind != events.KindDNSRead || e.Source != "dnsfilter1:pi" || e.Stream != "scan/7-1" || !e.Time.Equal(at) {
		t.Fatalf("envelope %+v", e)
	}
	var p events.DNSRead
	if err := events.DecodeInto(e, &p); err != nil {
		t.Fatal(err)
	}
	want := []events.DNSRow{
		{Hour: hour.Unix(), Client: "192.0.2.50", Lookups: []events.DNSLookup{{Domain: "example.com", Count: 2, Answers: []string{"2001:db8::1"}}, {Domain: "z.example", Count: 1}}},
		{Hour: hour.Unix(), Client: "192.0.2.51", Lookups: []events.DNSLookup{{Domain: "ads.example.net", Count: 1, Blocked: 1}}},
	}
	if !reflect.DeepEqual(p.Rows, want) || p.Kind != "dnsfilter1" || p.Cursor != "v1 1 2 " || p.Entries != 3 || p.Skipped != 1 {
		t.Fatalf("payload %+v", p)
	}
	if p.Started.Location() != time.UTC {
		t.Fatal("times not in UTC")
	}
}

// BenchmarkDNSEvent converts a read of 20 clients × 60 domains (one
// answer each) into its event, reporting the payload's bytes per lookup.
func BenchmarkDNSEvent(b *testing.B) {
	hour := time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)
	r := &sources.DNSRead{ScanID: "1-1", Started: hour, Finished: hour.Add(time.Second), Complete: true, Cursor: "v1 1777622400000000000 0 3w5e11264sgsf"}
	for c := range 20 {
		for d := range 60 {
			r.Rows = append(r.Rows, sources.DNSRow{Hour: hour, Client: netip.AddrFrom4([4]byte{192, 168, 1, byte(10 + c)}),
				Domain: "host" + strconv.Itoa(d) + ".cdn.example.com", Count: uint32(1 + d%5), Answers: []netip.Addr{netip.AddrFrom4([4]byte{93, 184, byte(d), 14})}})
		}
	}
	var size int
	for b.Loop() {
		e, err := DNSEvent(r, "dnsfilter1", "dnsfilter1:pi")
		if err != nil {
			b.Fatal(err)
		}
		size = len(e.Payload)
	}
	b.ReportMetric(float64(size)/float64(len(r.Rows)), "bytes/lookup")
}
