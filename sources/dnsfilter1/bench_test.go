package dnsfilter1

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
)

// BenchmarkParseAggregate parses pages of 1,000 query-log entries (50
// clients, 400 domains) and aggregates them: entries/s is the figure
// (target ≥ 200,000).
func BenchmarkParseAggregate(b *testing.B) {
	t0 := float64(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC).Unix())
	var qs []map[string]any
	for i := range 1000 {
		status := "FORWARDED"
		if i%7 == 0 {
			status = "GRAVITY"
		}
		qs = append(qs, map[string]any{"id": 52011 - i, "time": t0 + float64(i)*1.7, "type": "A", "domain": fmt.Sprintf("host%d.example%d.com", i%400, i%13),
			"cname": nil, "status": status, "client": map[string]any{"ip": fmt.Sprintf("192.0.2.%d", i%50), "name": "laptop.lan"}, "dnssec": "INSECURE",
			"reply": map[string]any{"type": "IP", "time": 14.2}, "list_id": nil, "upstream": "198.51.100.53#53", "ede": map[string]any{"code": 0, "text": nil}})
	}
	page, _ := json.Marshal(map[string]any{"queries": qs, "cursor": 52011, "recordsTotal": 52011, "recordsFiltered": 1000, "draw": 0, "took": 0.007})
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p, err := parseQueries(page)
		if err != nil {
			b.Fatal(err)
		}
		var agg sources.DNSAggregator
		for i := range p.Queries {
			e := &p.Queries[i]
			at, _ := e.at()
			agg.Add(at, e.client(), e.Domain, blocked(e.Status), nil)
		}
		if len(agg.Rows()) == 0 {
			b.Fatal("no rows")
		}
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "entries/s")
}
