package dnssd

import (
	"context"
	"errors"
	"github.com/jocasta/jocasta/sources/resolve/onlink"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"

	"github.com/jocasta/jocasta/sources"
)

// device is a fake mDNS responder: the records it owns and how it answers.
type device struct {
	addr    string
	records []dns.RR
	// extras: answer a browse with the SRV and address records too, as
	// avahi does for one-shot queries.
	extras bool
	// raw, when set, is sent instead of any answer.
	raw  []byte
	conn *net.UDPConn
}

func (d *device) answer(q dns.Question) [][]byte {
	if d.raw != nil {
		return [][]byte{d.raw}
	}
	m := new(dns.Msg)
	m.Response, m.Authoritative = true, true
	m.Question = []dns.Question{q}
	for _, rr := range d.records {
		h := rr.Header()
		if strings.EqualFold(h.Name, q.Name) && h.Rrtype == q.Qtype {
			m.Answer = append(m.Answer, rr)
		}
	}
	if len(m.Answer) == 0 {
		return nil
	}
	if d.extras && q.Qtype == dns.TypePTR && q.Name != ServicesName {
		for _, rr := range d.records {
			if t := rr.Header().Rrtype; t == dns.TypeSRV || t == dns.TypeA {
				m.Answer = append(m.Answer, rr)
			}
		}
	}
	b, err := m.Pack()
	if err != nil {
		panic(err)
	}
	return [][]byte{b}
}

// fakeLink is the "multicast group": every query it gets is answered by
// every device, each from its own address.
type fakeLink struct {
	conn    *net.UDPConn
	mu      sync.Mutex
	queries []dns.Question
}

func startLink(t *testing.T, devices []*device) *fakeLink {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devices {
		d.conn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(d.addr)})
		if err != nil {
			t.Fatal(err)
		}
	}
	l := &fakeLink{conn: conn}
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, maxPacket)
		for {
			n, src, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			var q dns.Msg
			if q.Unpack(buf[:n]) != nil || len(q.Question) != 1 {
				continue
			}
			l.mu.Lock()
			l.queries = append(l.queries, q.Question[0])
			l.mu.Unlock()
			for _, d := range devices {
				for _, p := range d.answer(dns.Question{Name: q.Question[0].Name, Qtype: q.Question[0].Qtype, Qclass: dns.ClassINET}) {
					_, _ = d.conn.WriteToUDPAddrPort(p, src)
				}
			}
		}
	})
	t.Cleanup(func() {
		conn.Close()
		wg.Wait()
		for _, d := range devices {
			d.conn.Close()
		}
	})
	return l
}

func hdr(name string, t uint16) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET | 1<<15, Ttl: 120}
}

// publish returns the records of one service instance.
func publish(instance, typ string, port uint16, host string) []dns.RR {
	tl := typ + ".local."
	full := instance + "." + tl
	return []dns.RR{
		&dns.PTR{Hdr: hdr(ServicesName, dns.TypePTR), Ptr: tl},
		&dns.PTR{Hdr: hdr(tl, dns.TypePTR), Ptr: full},
		&dns.SRV{Hdr: hdr(full, dns.TypeSRV), Port: port, Target: host},
		&dns.TXT{Hdr: hdr(full, dns.TypeTXT), Txt: []string{""}},
	}
}

func addr(name, ip string) dns.RR {
	return &dns.A{Hdr: hdr(name, dns.TypeA), A: net.ParseIP(ip)}
}

func loopbackLinks(t *testing.T) onlink.Links {
	t.Helper()
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Skipf("no loopback interface: %v", err)
	}
	return onlink.Links{{Prefix: netip.MustParsePrefix("127.0.0.0/25"), Interface: *lo}}
}

func cat(parts ...[]dns.RR) []dns.RR {
	var out []dns.RR
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestEnrich(t *testing.T) {
	devices := []*device{
		{addr: "127.0.0.10", extras: true, records: cat(
			publish(`Kitchen\ Printer`, "_http._tcp", 8080, "printer.local."),
			publish(`Kitchen\ Printer`, "_ipp._tcp", 631, "printer.local."),
			[]dns.RR{addr("printer.local.", "127.0.0.10")})},
		{addr: "127.0.0.11", extras: true, records: cat(
			publish(`Family\ NAS`, "_smb._tcp", 445, "nas.local."),
			[]dns.RR{addr("nas.local.", "127.0.0.11")})},
		// Answers a browse with the PTR only and never gives an address:
		// resolved by an SRV query, mapped by the sender.
		{addr: "127.0.0.12", records: publish(`Living\ Room\.TV\ \195\156n\195\175code`, "_airplay._tcp", 7000, "tv.local.")},
		// Not a sweep host.
		{addr: "127.0.0.13", extras: true, records: cat(
			publish("Elsewhere", "_http._tcp", 80, "else.local."), []dns.RR{addr("else.local.", "127.0.0.13")})},
		// Hostile: garbage.
		{addr: "127.0.0.14", raw: []byte{0, 0, 0x84, 0, 0, 0, 0, 9, 0, 0}},
		// Hostile: bad type names and an instance of the wrong shape.
		{addr: "127.0.0.15", extras: true, records: []dns.RR{
			&dns.PTR{Hdr: hdr(ServicesName, dns.TypePTR), Ptr: "not-a-type.local."},
			&dns.PTR{Hdr: hdr(ServicesName, dns.TypePTR), Ptr: "_x._tcp.local."},
			&dns.PTR{Hdr: hdr("_x._tcp.local.", dns.TypePTR), Ptr: "a.b._x._tcp.local."},
			&dns.PTR{Hdr: hdr("_x._tcp.local.", dns.TypePTR), Ptr: "Other._y._tcp.local."},
			&dns.SRV{Hdr: hdr("a.b._x._tcp.local.", dns.TypeSRV), Port: 1, Target: "h.local."},
		}},
		// Off-link (outside 127.0.0.0/25): ignored.
		{addr: "127.0.0.200", extras: true, records: cat(
			publish("Spoof", "_http._tcp", 80, "nas.local."), []dns.RR{addr("nas.local.", "127.0.0.11")})},
	}
	link := startLink(t, devices)

	hosts := []*sources.Host{
		{IP: netip.MustParseAddr("127.0.0.10")},
		{IP: netip.MustParseAddr("127.0.0.11"), Names: map[string]string{"dns": "nas.lan"}},
		{IP: netip.MustParseAddr("127.0.0.12")},
		{IP: netip.MustParseAddr("127.0.0.14")},
		{IP: netip.MustParseAddr("127.0.0.15")},
	}
	r := New(Options{Timeout: 300 * time.Millisecond})
	r.group = link.conn.LocalAddr().(*net.UDPAddr).AddrPort()
	ls := loopbackLinks(t)
	r.links = func() (onlink.Links, error) { return ls, nil }
	err := r.Enrich(context.Background(), hosts)
	if !errors.Is(err, ErrMalformed) {
		t.Errorf("err = %v, want the garbage reported (ErrMalformed)", err)
	}

	tests := []struct {
		host     int
		wantName string
		wantSvcs []sources.Service
	}{
		{0, "Kitchen Printer", []sources.Service{
			{Instance: "Kitchen Printer", Type: "_http._tcp", Port: 8080},
			{Instance: "Kitchen Printer", Type: "_ipp._tcp", Port: 631},
		}},
		{1, "", []sources.Service{{Instance: "Family NAS", Type: "_smb._tcp", Port: 445}}},
		{2, "Living Room.TV Ünïcode", []sources.Service{{Instance: "Living Room.TV Ünïcode", Type: "_airplay._tcp", Port: 7000}}},
		{3, "", nil},
		{4, "", nil},
	}
	for _, tc := range tests {
		h := hosts[tc.host]
		t.Run(h.IP.String(), func(t *testing.T) {
			if got := h.Names[sources.NameDNSSD]; got != tc.wantName {
				t.Errorf("dnssd name = %q, want %q", got, tc.wantName)
			}
			if diff := cmp.Diff(tc.wantSvcs, h.Services); diff != "" {
				t.Errorf("services (-want +got):\n%s", diff)
			}
		})
	}
	if hosts[1].Names["dns"] != "nas.lan" || len(hosts[1].Names) != 1 {
		t.Errorf("named host's names changed: %v", hosts[1].Names)
	}

	// The queries: enumeration, a browse per valid type, an SRV for the
	// TV, all with the QU bit.
	want := map[string]bool{
		"PTR " + ServicesName:   true,
		"PTR _http._tcp.local.": true, "PTR _ipp._tcp.local.": true, "PTR _smb._tcp.local.": true,
		"PTR _airplay._tcp.local.": true, "PTR _x._tcp.local.": true,
		`SRV living\ room\.tv\ \195\156n\195\175code._airplay._tcp.local.`: true,
		"A tv.local.": false, // sent only after the SRV round; not needed: sender fallback
	}
	link.mu.Lock()
	got := map[string]bool{}
	for _, q := range link.queries {
		got[dns.TypeToString[q.Qtype]+" "+q.Name] = true
		if q.Qclass != qclassQU {
			t.Errorf("query %v without the QU bit", q)
		}
	}
	link.mu.Unlock()
	for q, w := range want {
		if got[q] != w {
			t.Errorf("query %q sent = %v, want %v", q, got[q], w)
		}
	}
}

func TestEnrichNoLink(t *testing.T) {
	r := New(Options{Timeout: 50 * time.Millisecond})
	ls := loopbackLinks(t)
	r.links = func() (onlink.Links, error) { return ls, nil }
	err := r.Enrich(context.Background(), []*sources.Host{{IP: netip.MustParseAddr("192.0.2.1")}})
	if !errors.Is(err, ErrNoLink) {
		t.Errorf("err = %v, want ErrNoLink", err)
	}
	if err := r.Enrich(context.Background(), nil); err != nil {
		t.Errorf("no hosts: %v", err)
	}
}

func TestCancel(t *testing.T) {
	link := startLink(t, nil)
	r := New(Options{Timeout: time.Hour})
	r.group = link.conn.LocalAddr().(*net.UDPAddr).AddrPort()
	ls := loopbackLinks(t)
	r.links = func() (onlink.Links, error) { return ls, nil }
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Enrich(ctx, []*sources.Host{{IP: netip.MustParseAddr("127.0.0.10")}}) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want DeadlineExceeded", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Enrich ignored the context")
	}
}
