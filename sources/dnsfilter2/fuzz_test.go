package dnsfilter2

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/jocasta/jocasta/sources"
)

// FuzzParseLog feeds the query-log parser and the aggregation arbitrary
// replies: they never panic, and what they count is what they were
// given.
func FuzzParseLog(f *testing.F) {
	f.Add([]byte(`{"data":[{"answer":[{"type":"A","value":"93.184.215.14","ttl":300}],"client":"192.0.2.50","question":{"class":"IN","name":"example.com","type":"A"},"reason":"NotFilteredNotFound","time":"2024-05-01T12:22:41.537419101+02:00"}],"oldest":"2024-05-01T12:22:41.537419101+02:00"}`))
	f.Add([]byte(`{"data":[],"oldest":""}`))
	f.Add([]byte(`{"data":[{"answer":[{"type":"A","value":{"x":1}}],"client":"1.2.3","question":{"name":"."},"time":"bad"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		// The fast scanner, when it takes a page, reads what
		// encoding/json reads.
		if fp, err := fastLog(b); err == nil {
			jp, err := parseLogJSON(b)
			if err != nil {
				t.Fatalf("the fast path took a page encoding/json refuses: %v", err)
			}
			if !reflect.DeepEqual(norm(fp), norm(jp)) {
				t.Fatalf("fast path\n%+v\nencoding/json\n%+v", fp, jp)
			}
		}
		p, err := parseLog(b)
		if err != nil {
			return
		}
		var agg sources.DNSAggregator
		var ans []netip.Addr
		for i := range p.Data {
			e := &p.Data[i]
			at, ok := e.at()
			if !ok {
				agg.Skip()
				continue
			}
			_ = e.key()
			ans = e.answers(ans)
			agg.Add(at, e.client(), e.Question.Name, e.blocked(), ans)
		}
		total := 0
		for _, r := range agg.Rows() {
			total += int(r.Count)
			if r.Domain == "" || !r.Client.IsValid() || r.Blocked > r.Count || len(r.Answers) > sources.MaxDNSAnswers {
				t.Fatalf("bad row %+v", r)
			}
		}
		if total != agg.Entries() || agg.Entries()+agg.Skipped() != len(p.Data) {
			t.Fatalf("counted %d of %d entries (%d skipped)", total, len(p.Data), agg.Skipped())
		}
	})
}

// norm makes empty and nil slices alike for comparison.
func norm(p *logPage) *logPage {
	q := *p
	q.Data = nil
	for _, e := range p.Data {
		if len(e.Answer) == 0 {
			e.Answer = nil
		}
		for k := range e.Answer {
			if len(e.Answer[k].Value) == 0 {
				e.Answer[k].Value = nil
			}
		}
		q.Data = append(q.Data, e)
	}
	return &q
}
