package netbios

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
)

// responder is a fake NetBIOS name service on one loopback address.
type responder struct {
	conn    *net.UDPConn
	queries atomic.Int32
	wg      sync.WaitGroup
}

// reply answers a request; it returns the packets to send back and the
// connection to send them from (nil: the responder's own).
type reply func(req []byte) ([][]byte, *net.UDPConn)

func startResponder(t *testing.T, addr netip.AddrPort, fn reply) *responder {
	t.Helper()
	conn, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(addr))
	if err != nil {
		t.Fatalf("fake responder on %s: %v", addr, err)
	}
	r := &responder{conn: conn}
	r.wg.Go(func() {
		buf := make([]byte, 2048)
		for {
			n, src, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			r.queries.Add(1)
			pkts, from := fn(append([]byte(nil), buf[:n]...))
			if from == nil {
				from = conn
			}
			for _, p := range pkts {
				_, _ = from.WriteToUDPAddrPort(p, src)
			}
		}
	})
	t.Cleanup(func() { conn.Close(); r.wg.Wait() })
	return r
}

func reqID(req []byte) uint16 {
	if len(req) < 2 {
		return 0
	}
	return uint16(req[0])<<8 | uint16(req[1])
}

func TestEnrich(t *testing.T) {
	mac := []byte{0x02, 0, 0, 0, 0, 1}
	// Pick a port once; every fake host listens on it.
	probe, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)})
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(probe.LocalAddr().(*net.UDPAddr).Port)
	probe.Close()
	at := func(last byte) netip.AddrPort {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, last}), port)
	}
	other, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 99)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	good := func(req []byte) ([][]byte, *net.UDPConn) {
		return [][]byte{buildResponse(reqID(req), sampleNames, mac)}, nil
	}
	tests := []struct {
		name      string
		preset    map[string]string // names already known
		respond   reply             // nil: nothing listens
		wantName  string
		wantAsked bool
		wantErr   bool
	}{
		{name: "answers", respond: good, wantName: "FILESRV", wantAsked: true},
		{name: "silent host", wantAsked: false},
		{name: "already named by dns", preset: map[string]string{"dns": "x.lan"},
			respond: good, wantName: "", wantAsked: false},
		{name: "malformed reply", wantAsked: true, wantErr: true,
			respond: func(req []byte) ([][]byte, *net.UDPConn) {
				b := buildResponse(reqID(req), sampleNames, mac)
				b[12+34+10] = 0xff // 255 names
				return [][]byte{b[:80]}, nil
			}},
		{name: "malformed then good", wantName: "FILESRV", wantAsked: true,
			respond: func(req []byte) ([][]byte, *net.UDPConn) {
				return [][]byte{{0xde, 0xad}, buildResponse(reqID(req), sampleNames, mac)}, nil
			}},
		{name: "wrong transaction id", wantAsked: true,
			respond: func(req []byte) ([][]byte, *net.UDPConn) {
				return [][]byte{buildResponse(reqID(req)+1, sampleNames, mac)}, nil
			}},
		{name: "reply from another address", wantAsked: true,
			respond: func(req []byte) ([][]byte, *net.UDPConn) {
				return [][]byte{buildResponse(reqID(req), sampleNames, mac)}, other
			}},
		{name: "no unique name", wantAsked: true,
			respond: func(req []byte) ([][]byte, *net.UDPConn) {
				return [][]byte{buildResponse(reqID(req), []entry{{"WG", 0, 0x8400}}, mac)}, nil
			}},
	}
	var hosts []*sources.Host
	var fakes []*responder
	for i, tc := range tests {
		addr := at(byte(10 + i))
		h := &sources.Host{IP: addr.Addr()}
		for k, v := range tc.preset {
			h.SetName(k, v)
		}
		hosts = append(hosts, h)
		var f *responder
		if tc.respond != nil {
			f = startResponder(t, addr, tc.respond)
		}
		fakes = append(fakes, f)
	}
	r := New(Options{Timeout: 300 * time.Millisecond})
	r.port = port
	err = r.Enrich(context.Background(), hosts)
	if err == nil || !errors.Is(err, ErrMalformed) {
		t.Errorf("Enrich error = %v, want one wrapping ErrMalformed", err)
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := hosts[i].Names[sources.NameNetBIOS]; got != tc.wantName {
				t.Errorf("netbios name = %q, want %q", got, tc.wantName)
			}
			asked := fakes[i] != nil && fakes[i].queries.Load() > 0
			if asked != tc.wantAsked {
				t.Errorf("asked = %v, want %v", asked, tc.wantAsked)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	mac := net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
	f := startResponder(t, netip.MustParseAddrPort("127.0.0.3:0"), func(req []byte) ([][]byte, *net.UDPConn) {
		return [][]byte{buildResponse(reqID(req), sampleNames, mac)}, nil
	})
	r := New(Options{})
	r.port = uint16(f.conn.LocalAddr().(*net.UDPAddr).Port)
	st, err := r.Lookup(context.Background(), netip.MustParseAddr("127.0.0.3"))
	if err != nil {
		t.Fatal(err)
	}
	if st.ComputerName() != "FILESRV" || st.Workgroup() != "HOMENET" || st.MAC.String() != mac.String() {
		t.Errorf("got %q / %q / %s", st.ComputerName(), st.Workgroup(), st.MAC)
	}
	if _, err := r.Lookup(context.Background(), netip.MustParseAddr("::1")); err == nil {
		t.Error("IPv6 lookup: no error")
	}
}

// TestCancel checks that a cancelled sweep returns at once, not after the
// per-query timeout, and leaves nothing running (goleak in TestMain).
func TestCancel(t *testing.T) {
	f := startResponder(t, netip.MustParseAddrPort("127.0.0.4:0"), func([]byte) ([][]byte, *net.UDPConn) {
		return nil, nil // never answers
	})
	r := New(Options{Timeout: time.Hour, Concurrency: 2})
	r.port = uint16(f.conn.LocalAddr().(*net.UDPAddr).Port)
	hosts := make([]*sources.Host, 5)
	for i := range hosts {
		hosts[i] = &sources.Host{IP: netip.MustParseAddr("127.0.0.4")}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Enrich(ctx, hosts) }()
	for f.queries.Load() < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Enrich did not return after cancel")
	}
	if n := f.queries.Load(); n != 2 {
		t.Errorf("%d queries sent, want 2 (the rest not started after cancel)", n)
	}
}
