package mdns

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/miekg/dns"
)

func TestParseReply(t *testing.T) {
	const qname = "50.2.0.192.in-addr.arpa."
	q := new(dns.Msg)
	q.SetQuestion(qname, dns.TypePTR)
	reply := func(edit func(m *dns.Msg)) []byte {
		m := new(dns.Msg)
		m.SetReply(q)
		m.Answer = []dns.RR{&dns.PTR{
			Hdr: dns.RR_Header{Name: qname, Rrtype: dns.TypePTR, Class: dns.ClassINET, Ttl: 10},
			Ptr: "printer.local.",
		}}
		if edit != nil {
			edit(m)
		}
		b, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	query, _ := q.Pack()
	tests := []struct {
		name    string
		in      []byte
		want    string
		wantErr bool
	}{
		{name: "plain", in: reply(nil), want: "printer.local"},
		{name: "cache flush", in: reply(func(m *dns.Msg) { m.Answer[0].Header().Class |= 1 << 15 }), want: "printer.local"},
		{name: "upper-case owner", in: reply(func(m *dns.Msg) { m.Answer[0].Header().Name = "50.2.0.192.IN-ADDR.ARPA." }), want: "printer.local"},
		{name: "two names, first sorted", in: reply(func(m *dns.Msg) {
			m.Answer = append(m.Answer, &dns.PTR{Hdr: *m.Answer[0].Header(), Ptr: "alpha.local."})
		}), want: "alpha.local"},
		{name: "answer in additional only", in: reply(func(m *dns.Msg) { m.Extra, m.Answer = m.Answer, nil })},
		{name: "other owner", in: reply(func(m *dns.Msg) { m.Answer[0].Header().Name = "51.2.0.192.in-addr.arpa." })},
		{name: "NXDOMAIN", in: reply(func(m *dns.Msg) { m.Rcode = dns.RcodeNameError })},
		{name: "query", in: query},
		{name: "escaped label kept", in: reply(func(m *dns.Msg) { m.Answer[0].(*dns.PTR).Ptr = `my\ host.local.` }), want: `my\ host.local`},
		{name: "empty", in: nil, wantErr: true},
		{name: "truncated", in: reply(nil)[:20], wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseReply(tc.in, qname)
			if tc.wantErr != (err != nil) || (err != nil && !errors.Is(err, ErrMalformed)) {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("name = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseCaptured(t *testing.T) {
	tests := []struct {
		file, qname, want string
	}{
		{"avahi-0.8-legacy.bin", "20.2.0.192.in-addr.arpa.", "labhost.local"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseReply(b, tc.qname)
			if err != nil || got != tc.want {
				t.Errorf("ParseReply = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestQuery(t *testing.T) {
	for _, qu := range []bool{false, true} {
		b, err := Query(7, "1.0.0.127.in-addr.arpa.", qu)
		if err != nil {
			t.Fatal(err)
		}
		var m dns.Msg
		if err := m.Unpack(b); err != nil {
			t.Fatal(err)
		}
		want := uint16(dns.ClassINET)
		if qu {
			want |= 1 << 15
		}
		if m.Id != 7 || m.RecursionDesired || m.Question[0].Qclass != want || m.Question[0].Qtype != dns.TypePTR {
			t.Errorf("qu=%v: %v", qu, m)
		}
	}
	if n, _ := ReverseName(netip.MustParseAddr("::ffff:192.0.2.1")); n != "1.2.0.192.in-addr.arpa." {
		t.Errorf("mapped address reverse name = %q", n)
	}
}

func FuzzParseReply(f *testing.F) {
	m := new(dns.Msg)
	m.SetQuestion("1.2.0.192.in-addr.arpa.", dns.TypePTR)
	m.Response = true
	m.Answer = []dns.RR{&dns.PTR{Hdr: dns.RR_Header{Name: "1.2.0.192.in-addr.arpa.", Rrtype: dns.TypePTR, Class: dns.ClassINET | 1<<15}, Ptr: "a.local."}}
	b, _ := m.Pack()
	f.Add(b)
	if b, err := os.ReadFile(filepath.Join("testdata", "avahi-0.8-legacy.bin")); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		name, err := ParseReply(b, "1.2.0.192.in-addr.arpa.")
		if err != nil && name != "" {
			t.Fatalf("name %q with error %v", name, err)
		}
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v does not wrap ErrMalformed", err)
		}
	})
}

func BenchmarkParseReply(b *testing.B) {
	pkt, err := os.ReadFile(filepath.Join("testdata", "avahi-0.8-legacy.bin"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if name, err := ParseReply(pkt, "20.2.0.192.in-addr.arpa."); err != nil || name == "" {
			b.Fatal(name, err)
		}
	}
}
