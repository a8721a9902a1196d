package mdns

import (
	"context"
	"errors"
	"github.com/jocasta/jocasta/sources/resolve/onlink"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/jocasta/jocasta/sources"
)

// fake is an mDNS responder on one loopback address.
type fake struct {
	conn    *net.UDPConn
	mu      sync.Mutex
	queries []*dns.Msg
	wg      sync.WaitGroup
}

// answer builds the replies to a query, and the socket to send them from
// (nil: the fake's own).
type answer func(q *dns.Msg) ([][]byte, *net.UDPConn)

func startFake(t *testing.T, addr netip.AddrPort, fn answer) *fake {
	t.Helper()
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(addr))
	if err != nil {
		t.Fatalf("fake responder on %s: %v", addr, err)
	}
	f := &fake{conn: conn}
	f.wg.Go(func() {
		buf := make([]byte, maxPacket)
		for {
			n, src, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			var q dns.Msg
			if q.Unpack(buf[:n]) != nil {
				continue
			}
			f.mu.Lock()
			f.queries = append(f.queries, &q)
			f.mu.Unlock()
			pkts, from := fn(&q)
			if from == nil {
				from = conn
			}
			for _, p := range pkts {
				_, _ = from.WriteToUDPAddrPort(p, src)
			}
		}
	})
	t.Cleanup(func() { conn.Close(); f.wg.Wait() })
	return f
}

func (f *fake) received() []*dns.Msg {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*dns.Msg(nil), f.queries...)
}

// legacyReply answers q with PTR records to targets (class may carry the
// cache-flush bit).
func legacyReply(q *dns.Msg, class uint16, owner string, targets ...string) []byte {
	m := new(dns.Msg)
	m.SetReply(q)
	m.Authoritative = true
	if owner == "" {
		owner = q.Question[0].Name
	}
	for _, tgt := range targets {
		m.Answer = append(m.Answer, &dns.PTR{
			Hdr: dns.RR_Header{Name: owner, Rrtype: dns.TypePTR, Class: class, Ttl: 10},
			Ptr: tgt,
		})
	}
	b, err := m.Pack()
	if err != nil {
		panic(err)
	}
	return b
}

func freePort(t *testing.T, ip string) uint16 {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(ip)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return uint16(c.LocalAddr().(*net.UDPAddr).Port)
}

func loopbackLinks(t *testing.T) onlink.Links {
	t.Helper()
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Skipf("no loopback interface: %v", err)
	}
	// 127.0.0.128/25 plays an off-link network.
	return onlink.Links{{Prefix: netip.MustParsePrefix("127.0.0.0/25"), Interface: *lo}}
}

func TestEnrich(t *testing.T) {
	port := freePort(t, "127.0.0.10")
	at := func(last byte) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, last}), port)
	}
	offLink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 200)})
	if err != nil {
		t.Fatal(err)
	}
	defer offLink.Close()

	// The "multicast group" is a fake on 127.0.0.1 that answers for one
	// host only, as another device's responder would.
	viaGroup := netip.MustParseAddr("127.0.0.21")
	revGroup, _ := ReverseName(viaGroup)
	group := startFake(t, netip.MustParseAddrPort("127.0.0.1:0"), func(q *dns.Msg) ([][]byte, *net.UDPConn) {
		if q.Question[0].Name == revGroup {
			return [][]byte{legacyReply(q, dns.ClassINET|1<<15, "", "viagroup.local.")}, nil
		}
		return nil, nil
	})

	good := func(q *dns.Msg) ([][]byte, *net.UDPConn) {
		return [][]byte{legacyReply(q, dns.ClassINET, "", "printer.local.")}, nil
	}
	tests := []struct {
		name      string
		last      byte
		preset    map[string]string
		respond   answer
		want      string
		wantAsked bool
	}{
		{name: "unicast answer", last: 20, respond: good, want: "printer.local", wantAsked: true},
		{name: "answered through the group", last: 21, want: "viagroup.local"},
		{name: "has a reverse DNS name", last: 22, preset: map[string]string{"dns": "x.lan"}, respond: good},
		{name: "netbios name does not stop mdns", last: 23, preset: map[string]string{"netbios": "X"},
			respond: good, want: "printer.local", wantAsked: true},
		{name: "cache-flush bit masked", last: 24, wantAsked: true, want: "flush.local",
			respond: func(q *dns.Msg) ([][]byte, *net.UDPConn) {
				return [][]byte{legacyReply(q, dns.ClassINET|1<<15, "", "flush.local.")}, nil
			}},
		{name: "answer for another name", last: 25, wantAsked: true,
			respond: func(q *dns.Msg) ([][]byte, *net.UDPConn) {
				return [][]byte{legacyReply(q, dns.ClassINET, "9.9.9.9.in-addr.arpa.", "other.local.")}, nil
			}},
		{name: "malformed then good", last: 26, wantAsked: true, want: "printer.local",
			respond: func(q *dns.Msg) ([][]byte, *net.UDPConn) {
				p, _ := good(q)
				return append([][]byte{{0x00, 0x01, 0x84}}, p...), nil
			}},
		{name: "reply from off-link source", last: 27, wantAsked: true,
			respond: func(q *dns.Msg) ([][]byte, *net.UDPConn) {
				p, _ := good(q)
				return p, offLink
			}},
		{name: "a query echoed back", last: 28, wantAsked: true,
			respond: func(q *dns.Msg) ([][]byte, *net.UDPConn) {
				b, _ := q.Pack()
				return [][]byte{b}, nil
			}},
		{name: "silent", last: 29},
		{name: "host off-link: not asked", last: 130, respond: good},
	}
	var hosts []*sources.Host
	fakes := make([]*fake, len(tests))
	for i, tc := range tests {
		h := &sources.Host{IP: at(tc.last).Addr()}
		for k, v := range tc.preset {
			h.SetName(k, v)
		}
		hosts = append(hosts, h)
		if tc.respond != nil {
			fakes[i] = startFake(t, at(tc.last), tc.respond)
		}
	}

	r := New(Options{Timeout: 300 * time.Millisecond})
	r.port = port
	r.group4 = group.conn.LocalAddr().(*net.UDPAddr).AddrPort()
	ls := loopbackLinks(t)
	r.links = func() (onlink.Links, error) { return ls, nil }
	err = r.Enrich(context.Background(), hosts)
	if err != nil {
		t.Errorf("Enrich: %v", err)
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := hosts[i].Names[sources.NameMDNS]; got != tc.want {
				t.Errorf("mdns name = %q, want %q", got, tc.want)
			}
			qs := fakes[i].received()
			if asked := len(qs) > 0; asked != tc.wantAsked {
				t.Fatalf("asked = %v, want %v", asked, tc.wantAsked)
			}
			for _, q := range qs {
				rev, _ := ReverseName(hosts[i].IP)
				if len(q.Question) != 1 || q.Question[0].Name != rev || q.Question[0].Qtype != dns.TypePTR ||
					q.Question[0].Qclass != dns.ClassINET || q.RecursionDesired || q.Id == 0 {
					t.Errorf("unicast query = %v", q)
				}
			}
		})
	}
	// Every host asked over unicast was also asked through the group with
	// the QU bit.
	qu := map[string]bool{}
	for _, q := range group.received() {
		if q.Question[0].Qclass != dns.ClassINET|1<<15 {
			t.Errorf("group query without QU bit: %v", q.Question[0])
		}
		qu[q.Question[0].Name] = true
	}
	for i, tc := range tests {
		rev, _ := ReverseName(hosts[i].IP)
		wantQU := tc.preset["dns"] == "" && tc.last < 128
		if qu[rev] != wantQU {
			t.Errorf("%s: QU query sent = %v, want %v", tc.name, qu[rev], wantQU)
		}
	}
}

func TestEnrichMalformedReported(t *testing.T) {
	f := startFake(t, netip.MustParseAddrPort("127.0.0.40:0"), func(*dns.Msg) ([][]byte, *net.UDPConn) {
		return [][]byte{{0xff, 0xff, 0xff}}, nil
	})
	r := New(Options{Timeout: 200 * time.Millisecond})
	r.port = uint16(f.conn.LocalAddr().(*net.UDPAddr).Port)
	r.group4 = netip.MustParseAddrPort("127.0.0.1:9") // discard
	ls := loopbackLinks(t)
	r.links = func() (onlink.Links, error) { return ls, nil }
	h := &sources.Host{IP: netip.MustParseAddr("127.0.0.40")}
	err := r.Enrich(context.Background(), []*sources.Host{h})
	if !errors.Is(err, ErrMalformed) {
		t.Errorf("err = %v, want ErrMalformed", err)
	}
	if h.Named() {
		t.Errorf("named %v from garbage", h.Names)
	}
}

func TestCancel(t *testing.T) {
	var asked atomic.Int32
	f := startFake(t, netip.MustParseAddrPort("127.0.0.41:0"), func(*dns.Msg) ([][]byte, *net.UDPConn) {
		asked.Add(1)
		return nil, nil
	})
	r := New(Options{Timeout: time.Hour, Concurrency: 1})
	r.port = uint16(f.conn.LocalAddr().(*net.UDPAddr).Port)
	r.group4 = netip.MustParseAddrPort("127.0.0.1:9")
	ls := loopbackLinks(t)
	r.links = func() (onlink.Links, error) { return ls, nil }
	hosts := []*sources.Host{{IP: netip.MustParseAddr("127.0.0.41")}, {IP: netip.MustParseAddr("127.0.0.41")}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Enrich(ctx, hosts) }()
	for asked.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Enrich ignored cancellation")
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("%d hosts asked, want 1", n)
	}
}

// TestLookupIPv6 asks ::1 over a udp6 socket for ip6.arpa.
func TestLookupIPv6(t *testing.T) {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Skipf("no loopback interface: %v", err)
	}
	conn, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	conn.Close()
	f := startFake(t, netip.MustParseAddrPort("[::1]:0"), func(q *dns.Msg) ([][]byte, *net.UDPConn) {
		return [][]byte{legacyReply(q, dns.ClassINET, "", "six.local.")}, nil
	})
	r := New(Options{Timeout: 500 * time.Millisecond})
	r.port = uint16(f.conn.LocalAddr().(*net.UDPAddr).Port)
	r.group6 = netip.MustParseAddrPort("[::1]:9")
	r.links = func() (onlink.Links, error) {
		return onlink.Links{{Prefix: netip.MustParsePrefix("::1/128"), Interface: *lo}}, nil
	}
	got, err := r.Lookup(context.Background(), netip.IPv6Loopback())
	if err != nil || got != "six.local" {
		t.Fatalf("Lookup(::1) = %q, %v", got, err)
	}
	qs := f.received()
	if len(qs) == 0 || qs[0].Question[0].Name != "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.ip6.arpa." {
		t.Errorf("queries %v", qs)
	}
	if _, err := r.Lookup(context.Background(), netip.MustParseAddr("2001:db8::1")); !errors.Is(err, ErrOffLink) {
		t.Errorf("off-link IPv6 host: err = %v, want ErrOffLink", err)
	}
}
