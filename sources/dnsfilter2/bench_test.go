package dnsfilter2

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
)

// BenchmarkParseAggregate parses pages of 1,000 query-log entries (50
// clients, 400 domains, an A answer each) and aggregates them:
// entries/s is the figure (target ≥ 200,000).
func BenchmarkParseAggregate(b *testing.B) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.FixedZone("CEST", 7200))
	var data []map[string]any
	for i := range 1000 {
		data = append(data, map[string]any{
			"answer":        []any{map[string]any{"type": "A", "value": fmt.Sprintf("93.184.%d.%d", i%200, i%250), "ttl": 300}},
			"answer_dnssec": false, "cached": false, "client": fmt.Sprintf("192.0.2.%d", i%50),
			"client_info":  map[string]any{"whois": map[string]any{}, "name": "laptop", "disallowed_rule": "", "disallowed": false},
			"client_proto": "", "elapsedMs": "12.514", "question": map[string]any{"class": "IN", "name": fmt.Sprintf("host%d.example%d.com", i%400, i%13), "type": "A"},
			"reason": "NotFilteredNotFound", "rules": []any{}, "status": "NOERROR",
			"time": t0.Add(-time.Duration(i) * 1700 * time.Millisecond).Format(time.RFC3339Nano), "upstream": "https://dns.example.net:443/dns-query",
		})
	}
	page, _ := json.Marshal(map[string]any{"data": data, "oldest": data[len(data)-1]["time"]})
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
		for i := range p.Data {
			e := &p.Data[i]
			at, _ := e.at()
			_ = e.key()
			ans = e.answers(ans)
			agg.Add(at, e.client(), e.Question.Name, e.blocked(), ans)
		}
		if len(agg.Rows()) == 0 {
			b.Fatal("no rows")
		}
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "entries/s")
}
