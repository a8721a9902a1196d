package dnsfilter1

import (
	"testing"

	"github.com/jocasta/jocasta/sources"
)

// FuzzParseQueries feeds the query-log parser and the aggregation
// arbitrary replies: they never panic, and what they count is what they
// were given.
func FuzzParseQueries(f *testing.F) {
	f.Add([]byte(`{"queries":[{"id":1,"time":1714557712.31,"type":"A","domain":"example.com","status":"GRAVITY","client":{"ip":"192.0.2.50"}}],"cursor":1}`))
	f.Add([]byte(`{"queries":[],"cursor":null}`))
	f.Add([]byte(`{"queries":[{"id":2,"time":-1,"domain":"x\u0000y","client":{"ip":"::ffff:1.2.3.4%eth0"}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := parseQueries(b)
		if err != nil {
			return
		}
		var agg sources.DNSAggregator
		for i := range p.Queries {
			e := &p.Queries[i]
			at, ok := e.at()
			if !ok {
				agg.Skip()
				continue
			}
			agg.Add(at, e.client(), e.Domain, blocked(e.Status), nil)
		}
		total := 0
		for _, r := range agg.Rows() {
			total += int(r.Count)
			if r.Domain == "" || !r.Client.IsValid() || r.Blocked > r.Count {
				t.Fatalf("bad row %+v", r)
			}
		}
		if total != agg.Entries() || agg.Entries()+agg.Skipped() != len(p.Queries) {
			t.Fatalf("counted %d of %d entries (%d skipped)", total, len(p.Queries), agg.Skipped())
		}
	})
}
