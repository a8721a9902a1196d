package dnsnode

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
)

// BenchmarkParseAggregate parses pages of 1,000 query-log entries (50
// clients, 400 domains, an answer each) and aggregates them: entries/s
// is the figure (target ≥ 200,000).
func BenchmarkParseAggregate(b *testing.B) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	var es []map[string]any
	for i := range 1000 {
		es = append(es, map[string]any{"rowNumber": 13000 - i, "timestamp": t0.Add(-time.Duration(i) * 1700 * time.Millisecond).Format("2006-01-02T15:04:05.999Z"),
			"clientIpAddress": fmt.Sprintf("192.0.2.%d", i%50), "protocol": "Udp", "responseType": "Recursive", "responseRtt": 21.4, "rcode": "NoError",
			"qname": fmt.Sprintf("host%d.example%d.com", i%400, i%13), "qtype": "A", "qclass": "IN", "answer": fmt.Sprintf("93.184.%d.%d", i%200, i%250)})
	}
	page, _ := json.Marshal(map[string]any{"pageNumber": 1, "totalPages": 13, "totalEntries": 13000, "entries": es})
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	b.ResetTimer()
	var ans []netip.Addr
	for b.Loop() {
		p, err := parseLog(page)
		if err != nil {
			b.Fatal(err)
		}
		var agg sources.DNSAggregator
		for i := range p.Entries {
			e := &p.Entries[i]
			at, _ := e.at()
			_ = e.key()
			ans = e.answers(ans)
			agg.Add(at, e.client(), str(e.QName), e.blocked(), ans)
		}
		if len(agg.Rows()) == 0 {
			b.Fatal("no rows")
		}
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "entries/s")
}
