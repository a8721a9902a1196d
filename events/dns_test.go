package events

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDNSReadRoundTrip(t *testing.T) {
	at := time.Date(2026, 5, 1, 10, 1, 0, 0, time.UTC)
	in := DNSRead{
		ScanID: "1-1", Kind: "dnsfilter2", Started: at.Add(-time.Second), Finished: at, Complete: true,
		Cursor: "v1 1777629660000000000 0 abc", Entries: 3, Skipped: 1,
		Rows: []DNSRow{
			{Hour: at.Truncate(time.Hour).Unix(), Client: "192.0.2.50", Lookups: []DNSLookup{{Domain: "example.com", Count: 2, Answers: []string{"93.184.215.14"}}}},
			{Hour: at.Truncate(time.Hour).Unix(), Client: "192.0.2.51", Lookups: []DNSLookup{{Domain: "ads.example.net", Count: 1, Blocked: 1}, {Domain: "b.example", Count: 1}}},
		},
	}
	e, err := New(KindDNSRead, in, at)
	if err != nil {
		t.Fatal(err)
	}
	// Rows are compact: one per client and hour, short keys, zero counts
	// and no answers left out.
	for _, want := range []string{
		`{"h":1777629600,"c":"192.0.2.50","l":[{"d":"example.com","n":2,"a":["93.184.215.14"]}]}`,
		`{"h":1777629600,"c":"192.0.2.51","l":[{"d":"ads.example.net","n":1,"b":1},{"d":"b.example","n":1}]}`,
	} {
		if !strings.Contains(string(e.Payload), want) {
			t.Fatalf("row not compact: %s", e.Payload)
		}
	}
	got, err := Decode(e)
	if err != nil {
		t.Fatal(err)
	}
	out := got.(*DNSRead)
	if !reflect.DeepEqual(out.Rows, in.Rows) || out.Cursor != in.Cursor || !out.Finished.Equal(at) || out.Kind != "dnsfilter2" {
		t.Fatalf("round trip: %+v", out)
	}
}
