package dnssd

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"

	"github.com/jocasta/jocasta/sources"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCaptured replays answers avahi-daemon 0.8 gave to one-shot QU
// queries (see README): enumeration, browse, SRV and A.
func TestCaptured(t *testing.T) {
	c := newCache(DefaultMaxTypes, DefaultMaxInstances)
	src := netip.MustParseAddr("192.0.2.20")
	for _, f := range []string{"avahi-0.8-services.bin", "avahi-0.8-browse.bin", "avahi-0.8-srv.bin", "avahi-0.8-a.bin"} {
		recs, err := ParseRecords(readTestdata(t, f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(recs) == 0 {
			t.Fatalf("%s: no records", f)
		}
		c.add(src, recs)
	}
	if diff := cmp.Diff([]string{"_airplay._tcp.local.", "_http._tcp.local.", "_ipp._tcp.local."}, c.typeNames()); diff != "" {
		t.Errorf("types (-want +got):\n%s", diff)
	}
	tv := []sources.Service{{Instance: "Living Room.TV Ünïcode", Type: "_airplay._tcp", Port: 7000}}
	// The SRV target has an A and a link-local AAAA record: both map.
	want := map[netip.Addr][]sources.Service{src: tv, netip.MustParseAddr("fe80::582a:61ff:fe17:a4bb"): tv}
	if diff := cmp.Diff(want, c.services(), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("services (-want +got):\n%s", diff)
	}
}

func TestParseRecords(t *testing.T) {
	msg := func(edit func(m *dns.Msg)) []byte {
		m := new(dns.Msg)
		m.Response = true
		m.Answer = []dns.RR{&dns.PTR{Hdr: dns.RR_Header{Name: "_http._tcp.local.", Rrtype: dns.TypePTR, Class: dns.ClassINET | 1<<15}, Ptr: "X._http._tcp.local."}}
		m.Extra = []dns.RR{
			&dns.SRV{Hdr: dns.RR_Header{Name: "X._http._tcp.local.", Rrtype: dns.TypeSRV, Class: dns.ClassINET}, Port: 80, Target: "h.local."},
			&dns.AAAA{Hdr: dns.RR_Header{Name: "h.local.", Rrtype: dns.TypeAAAA, Class: dns.ClassINET}, AAAA: netip.MustParseAddr("fe80::1").AsSlice()},
			&dns.TXT{Hdr: dns.RR_Header{Name: "X._http._tcp.local.", Rrtype: dns.TypeTXT, Class: dns.ClassINET}, Txt: []string{"a=b"}},
			&dns.A{Hdr: dns.RR_Header{Name: "h.local.", Rrtype: dns.TypeA, Class: dns.ClassCHAOS}, A: []byte{1, 2, 3, 4}},
		}
		if edit != nil {
			edit(m)
		}
		b, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name    string
		in      []byte
		want    int
		wantErr bool
	}{
		{name: "every section, IN only, no TXT", in: msg(nil), want: 3},
		{name: "query", in: msg(func(m *dns.Msg) { m.Response = false })},
		{name: "error code", in: msg(func(m *dns.Msg) { m.Rcode = dns.RcodeRefused })},
		{name: "garbage", in: []byte{1, 2, 3}, wantErr: true},
		{name: "cut", in: msg(nil)[:40], wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := ParseRecords(tc.in)
			if tc.wantErr {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("err = %v, want ErrMalformed", err)
				}
				return
			}
			if err != nil || len(recs) != tc.want {
				t.Fatalf("got %d records, %v; want %d", len(recs), err, tc.want)
			}
		})
	}
}

func TestSplitInstance(t *testing.T) {
	tests := []struct {
		in, inst, typ string
		ok            bool
	}{
		{`Kitchen\ Printer._http._tcp.local.`, "Kitchen Printer", "_http._tcp", true},
		{`Living\ Room\.TV._airplay._tcp.local.`, "Living Room.TV", "_airplay._tcp", true},
		{`\195\156ber._ipp._TCP.Local.`, "Über", "_ipp._tcp", true},
		{`bad\255utf8._ipp._tcp.local.`, "bad\uFFFDutf8", "_ipp._tcp", true},
		{`ctl\007bell._ipp._tcp.local.`, "ctlbell", "_ipp._tcp", true},
		{`back\\slash._ipp._tcp.local.`, `back\slash`, "_ipp._tcp", true},
		{`\032._ipp._tcp.local.`, "", "", false}, // only a space
		{`x._ipp._sctp.local.`, "", "", false},
		{`x._ipp._tcp.example.`, "", "", false},
		{`a.b._ipp._tcp.local.`, "", "", false},
		{`x.ipp._tcp.local.`, "", "", false},
		{`x._waytoolongservicename._tcp.local.`, "", "", false},
		{`x._a_b._tcp.local.`, "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			inst, typ, ok := SplitInstance(tc.in)
			if inst != tc.inst || typ != tc.typ || ok != tc.ok {
				t.Errorf("= %q, %q, %v; want %q, %q, %v", inst, typ, ok, tc.inst, tc.typ, tc.ok)
			}
		})
	}
}

func TestCacheCaps(t *testing.T) {
	c := newCache(2, 3)
	src := netip.MustParseAddr("192.0.2.1")
	var recs []Record
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		recs = append(recs,
			Record{Type: dns.TypePTR, Name: strings.ToLower(ServicesName), Target: "_" + n + "._tcp.local."},
			Record{Type: dns.TypePTR, Name: "_a._tcp.local.", Target: n + "._a._tcp.local.", Instance: n + "._a._tcp.local."},
		)
	}
	for i := range 20 {
		recs = append(recs, Record{Type: dns.TypeA, Name: "h.local.", Addr: netip.AddrFrom4([4]byte{192, 0, 2, byte(i)})})
	}
	c.add(src, recs)
	c.add(src, recs) // again: known entries stay, nothing new gets in
	if len(c.types) != 2 || len(c.instances) != 3 || len(c.addrs["h.local."]) != maxAddrsPerName {
		t.Errorf("kept %d types, %d instances, %d addresses; want 2, 3, %d",
			len(c.types), len(c.instances), len(c.addrs["h.local."]), maxAddrsPerName)
	}
	// A network address for a loopback name is refused.
	c.add(src, []Record{{Type: dns.TypeA, Name: "lo.local.", Addr: netip.MustParseAddr("127.0.0.1")}})
	if len(c.addrs["lo.local."]) != 0 {
		t.Error("loopback address accepted from the network")
	}
}

func FuzzParseRecords(f *testing.F) {
	for _, name := range []string{"avahi-0.8-services.bin", "avahi-0.8-browse.bin", "avahi-0.8-srv.bin", "avahi-0.8-a.bin"} {
		f.Add(readTestdata(f, name))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := ParseRecords(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) || recs != nil {
				t.Fatalf("error %v with %d records", err, len(recs))
			}
			return
		}
		c := newCache(4, 8)
		c.add(netip.MustParseAddr("192.0.2.1"), recs)
		if len(c.types) > 4 || len(c.instances) > 8 {
			t.Fatalf("caps exceeded: %d types, %d instances", len(c.types), len(c.instances))
		}
		c.unresolved()
		for _, svcs := range c.services() {
			for _, s := range svcs {
				if !utf8.ValidString(s.Instance) || s.Instance == "" {
					t.Fatalf("instance name %q", s.Instance)
				}
				if _, ok := ServiceType(s.Type + ".local."); !ok {
					t.Fatalf("service type %q", s.Type)
				}
			}
		}
	})
}

func BenchmarkParseRecords(b *testing.B) {
	pkt := readTestdata(b, "avahi-0.8-browse.bin")
	src := netip.MustParseAddr("192.0.2.20")
	b.ReportAllocs()
	for b.Loop() {
		recs, err := ParseRecords(pkt)
		if err != nil {
			b.Fatal(err)
		}
		c := newCache(DefaultMaxTypes, DefaultMaxInstances)
		c.add(src, recs)
		if len(c.services()) == 0 {
			b.Fatal("no services")
		}
	}
}
