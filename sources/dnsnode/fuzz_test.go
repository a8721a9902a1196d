package dnsnode

import (
	"net/netip"
	"testing"

	"github.com/jocasta/jocasta/sources"
)

// FuzzParseLog feeds the query-log parser and the aggregation arbitrary
// replies: they never panic, and what they count is what they were
// given.
func FuzzParseLog(f *testing.F) {
	f.Add([]byte(`{"pageNumber":1,"totalPages":7,"totalEntries":13,"entries":[{"rowNumber":13,"timestamp":"2024-05-01T10:22:52Z","clientIpAddress":"192.0.2.50","protocol":"Udp","responseType":"Recursive","responseRtt":21.4,"rcode":"NoError","qname":"example.com","qtype":"A","qclass":"IN","answer":"93.184.215.14"}]}`))
	f.Add([]byte(`{"entries":[{"timestamp":"2024-05-01T05:22:52.5-05:00","clientIpAddress":"::1","qname":null,"answer":null}]}`))
	f.Add([]byte(`{"entries":[{"timestamp":"2024-05-01 10:22:52","clientIpAddress":"192.0.2.1","qname":"A.B.","responseType":"Blocked","answer":"x, 1.2.3.4;;2001:db8::1"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := parseLog(b)
		if err != nil {
			return
		}
		var agg sources.DNSAggregator
		var ans []netip.Addr
		for i := range p.Entries {
			e := &p.Entries[i]
			at, ok := e.at()
			if !ok {
				agg.Skip()
				continue
			}
			_ = e.key()
			ans = e.answers(ans)
			agg.Add(at, e.client(), str(e.QName), e.blocked(), ans)
		}
		total := 0
		for _, r := range agg.Rows() {
			total += int(r.Count)
			if r.Domain == "" || !r.Client.IsValid() || r.Blocked > r.Count || len(r.Answers) > sources.MaxDNSAnswers {
				t.Fatalf("bad row %+v", r)
			}
		}
		if total != agg.Entries() || agg.Entries()+agg.Skipped() != len(p.Entries) {
			t.Fatalf("counted %d of %d entries (%d skipped)", total, len(p.Entries), agg.Skipped())
		}
	})
}
