package rdns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/jocasta/jocasta/sources"
)

// tcpKey prefixes the entry a truncated UDP answer is retried with.
const tcpKey = "tcp:"

// zone maps a reverse name to how the fake server answers it.
type zone map[string]func(q *dns.Msg) *dns.Msg

// fakeDNS serves z on 127.0.0.1:0 (UDP, and TCP on the same port when
// tcp is set) and returns its address.
func fakeDNS(t testing.TB, z zone, tcp bool) (string, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	h := dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		hits.Add(1)
		fn, ok := z[strings.ToLower(q.Question[0].Name)]
		if !ok {
			m := new(dns.Msg)
			m.SetRcode(q, dns.RcodeNameError)
			_ = w.WriteMsg(m)
			return
		}
		_, isTCP := w.RemoteAddr().(*net.TCPAddr)
		if m := fn(q); m != nil {
			if m.Truncated && isTCP {
				m = z[tcpKey+strings.ToLower(q.Question[0].Name)](q)
			}
			_ = w.WriteMsg(m)
		} // nil: stay silent, the client times out
	})
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	servers := []*dns.Server{{PacketConn: pc, Handler: h}}
	if tcp {
		l, err := net.Listen("tcp", pc.LocalAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		servers = append(servers, &dns.Server{Listener: l, Handler: h})
	}
	var wg sync.WaitGroup
	for _, s := range servers {
		started := make(chan struct{})
		s.NotifyStartedFunc = func() { close(started) }
		wg.Go(func() { _ = s.ActivateAndServe() })
		<-started
	}
	t.Cleanup(func() {
		for _, s := range servers {
			_ = s.Shutdown()
		}
		wg.Wait()
	})
	return pc.LocalAddr().String(), &hits
}

func ptr(names ...string) func(q *dns.Msg) *dns.Msg {
	return func(q *dns.Msg) *dns.Msg {
		m := new(dns.Msg)
		m.SetReply(q)
		for _, n := range names {
			m.Answer = append(m.Answer, &dns.PTR{
				Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypePTR, Class: dns.ClassINET, Ttl: 60},
				Ptr: n,
			})
		}
		return m
	}
}

func rcode(c int) func(q *dns.Msg) *dns.Msg {
	return func(q *dns.Msg) *dns.Msg {
		m := new(dns.Msg)
		m.SetRcode(q, c)
		return m
	}
}

func rev(ip string) string {
	r, err := dns.ReverseAddr(ip)
	if err != nil {
		panic(err)
	}
	return r
}

func TestEnrich(t *testing.T) {
	silent := func(*dns.Msg) *dns.Msg { return nil }
	primary := zone{
		rev("192.0.2.1"):   ptr("router.lan."),
		rev("192.0.2.2"):   ptr("zeta.lan.", "alpha.lan."),
		rev("192.0.2.3"):   rcode(dns.RcodeNameError),
		rev("192.0.2.4"):   rcode(dns.RcodeServerFailure),
		rev("192.0.2.5"):   silent,
		rev("192.0.2.6"):   ptr(),
		rev("192.0.2.7"):   rcode(dns.RcodeRefused),
		rev("2001:db8::1"): ptr("v6host.lan."),
		rev("192.0.2.8"): func(q *dns.Msg) *dns.Msg { // RFC 2317 delegation
			m := new(dns.Msg)
			m.SetReply(q)
			m.Answer = []dns.RR{
				&dns.CNAME{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeCNAME, Class: dns.ClassINET}, Target: "8.0-63.2.0.192.in-addr.arpa."},
				&dns.PTR{Hdr: dns.RR_Header{Name: "8.0-63.2.0.192.in-addr.arpa.", Rrtype: dns.TypePTR, Class: dns.ClassINET}, Ptr: "classless.lan."},
			}
			return m
		},
		rev("192.0.2.9"): func(q *dns.Msg) *dns.Msg { // truncated over UDP
			m := ptr("big.lan.")(q)
			m.Answer = nil
			m.Truncated = true
			return m
		},
		tcpKey + rev("192.0.2.9"): ptr("big.lan."),
		rev("192.0.2.10"):         ptr("weird\\ name\\009.lan."), // escaped bytes stay escaped
	}
	fallback := zone{
		rev("192.0.2.4"): ptr("second.lan."),
		rev("192.0.2.7"): rcode(dns.RcodeServerFailure),
	}
	srv1, _ := fakeDNS(t, primary, true)
	srv2, _ := fakeDNS(t, fallback, false)

	tests := []struct {
		ip   string
		want string
	}{
		{"192.0.2.1", "router.lan"},
		{"192.0.2.2", "alpha.lan"},
		{"192.0.2.3", ""},
		{"192.0.2.4", "second.lan"}, // SERVFAIL on the first server
		{"192.0.2.5", ""},           // first server silent; second says NXDOMAIN
		{"192.0.2.6", ""},
		{"192.0.2.7", ""}, // REFUSED then SERVFAIL: a failure
		{"2001:db8::1", "v6host.lan"},
		{"192.0.2.8", "classless.lan"},
		{"192.0.2.9", "big.lan"},
		{"192.0.2.10", `weird\ name\009.lan`},
	}
	hosts := make([]*sources.Host, len(tests))
	for i, tc := range tests {
		hosts[i] = &sources.Host{IP: netip.MustParseAddr(tc.ip)}
	}
	r := New(Options{Servers: []string{srv1, srv2}, Timeout: 300 * time.Millisecond})
	err := r.Enrich(context.Background(), hosts)
	if !errors.Is(err, ErrLookupsFailed) {
		t.Errorf("err = %v, want ErrLookupsFailed", err)
	} else if !strings.Contains(err.Error(), "1 of 11") {
		t.Errorf("err = %v, want one failure of 11 (only 192.0.2.7)", err)
	}
	for i, tc := range tests {
		t.Run(tc.ip, func(t *testing.T) {
			if got := hosts[i].Names[sources.NameDNS]; got != tc.want {
				t.Errorf("name = %q, want %q", got, tc.want)
			}
			if tc.want == "" && hosts[i].Named() {
				t.Errorf("unnamed host got names %v", hosts[i].Names)
			}
		})
	}
}

func TestEnrichTimeoutsSummarised(t *testing.T) {
	// A socket nobody reads: every query times out.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	hosts := []*sources.Host{
		{IP: netip.MustParseAddr("192.0.2.1")},
		{IP: netip.MustParseAddr("192.0.2.2")},
	}
	r := New(Options{Servers: []string{pc.LocalAddr().String()}, Timeout: 100 * time.Millisecond})
	err = r.Enrich(context.Background(), hosts)
	if !errors.Is(err, ErrLookupsFailed) || !strings.Contains(err.Error(), "2 timed out") {
		t.Errorf("err = %v, want 2 timeouts summarised", err)
	}
}

func TestServersFromResolvConf(t *testing.T) {
	addr, _ := fakeDNS(t, zone{rev("192.0.2.1"): ptr("router.lan.")}, false)
	host, port, _ := net.SplitHostPort(addr)
	dir := t.TempDir()
	conf := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(conf, []byte("# test\nnameserver "+host+"\noptions timeout:1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.conf")
	if err := os.WriteFile(empty, []byte("search lan\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// resolv.conf carries no port; check the file is read, then use the
	// fake's port through Servers built from the parsed address.
	r := New(Options{ResolvConf: conf})
	got, err := r.servers()
	if err != nil || len(got) != 1 || got[0] != net.JoinHostPort(host, "53") {
		t.Fatalf("servers = %v, %v", got, err)
	}
	r = New(Options{Servers: []string{net.JoinHostPort(host, port)}})
	if name, err := r.Lookup(context.Background(), netip.MustParseAddr("192.0.2.1")); err != nil || name != "router.lan" {
		t.Errorf("Lookup = %q, %v", name, err)
	}

	for _, bad := range []string{empty, filepath.Join(dir, "missing.conf")} {
		err := New(Options{ResolvConf: bad}).Enrich(context.Background(), []*sources.Host{{IP: netip.MustParseAddr("192.0.2.1")}})
		if err == nil {
			t.Errorf("%s: no error", filepath.Base(bad))
		}
	}
	if err := New(Options{ResolvConf: empty}).Enrich(context.Background(), nil); !errors.Is(err, ErrNoServers) {
		t.Errorf("empty resolv.conf: err = %v, want ErrNoServers", err)
	}
}

func TestCancel(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	hosts := make([]*sources.Host, 10)
	for i := range hosts {
		hosts[i] = &sources.Host{IP: netip.AddrFrom4([4]byte{192, 0, 2, byte(i)})}
	}
	r := New(Options{Servers: []string{pc.LocalAddr().String()}, Timeout: time.Hour, Concurrency: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Enrich(ctx, hosts) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want DeadlineExceeded", err)
		}
		if errors.Is(err, ErrLookupsFailed) {
			t.Errorf("cancelled lookups counted as failures: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Enrich ignored the context")
	}
}

// BenchmarkEnrich looks up a /24 against a loopback server that knows
// half of it.
func BenchmarkEnrich(b *testing.B) {
	z := zone{}
	hosts := make([]*sources.Host, 254)
	for i := range hosts {
		ip := netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)})
		hosts[i] = &sources.Host{IP: ip}
		if i%2 == 0 {
			z[rev(ip.String())] = ptr(fmt.Sprintf("h%d.lan.", i))
		}
	}
	addr, _ := fakeDNS(b, z, false)
	r := New(Options{Servers: []string{addr}})
	b.ReportAllocs()
	for b.Loop() {
		for _, h := range hosts {
			h.Names = nil
		}
		if err := r.Enrich(context.Background(), hosts); err != nil {
			b.Fatal(err)
		}
	}
	if hosts[0].Names[sources.NameDNS] != "h0.lan" {
		b.Fatalf("names %v", hosts[0].Names)
	}
}
