package portscan

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// listen opens a TCP listener on addr:0 that accepts and closes, and
// returns its port.
func listen(t *testing.T, addr string) uint16 {
	t.Helper()
	ln, err := net.Listen("tcp", addr+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return uint16(ln.Addr().(*net.TCPAddr).Port)
}

// closedPort returns a port nothing listens on at addr.
func closedPort(t *testing.T, addr string) uint16 {
	t.Helper()
	ln, err := net.Listen("tcp", addr+":0")
	if err != nil {
		t.Fatal(err)
	}
	p := uint16(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	return p
}

func TestScanLoopback(t *testing.T) {
	a, b := "127.0.0.1", "127.83.0.2"
	a1, a2 := listen(t, a), listen(t, a)
	b1 := listen(t, b)
	closed := closedPort(t, a)
	adv := listen(t, b) // advertised by b only
	ports := []uint16{a1, a2, b1, closed}
	for _, conc := range []int{1, 3, 64} {
		res, err := Scan(context.Background(), []Target{
			{IP: netip.MustParseAddr(a)},
			{IP: netip.MustParseAddr(b), Extra: []uint16{adv, b1}},
			{IP: netip.MustParseAddr("::ffff:" + a)}, // the same address again
		}, Params{Ports: ports, Concurrency: conc, Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		want := map[netip.Addr][]uint16{
			netip.MustParseAddr(a): sorted(a1, a2),
			netip.MustParseAddr(b): sorted(b1, adv),
		}
		if diff := cmp.Diff(want, res.Open, cmpopts.EquateComparable(netip.Addr{})); diff != "" {
			t.Errorf("concurrency %d: open (-want +got):\n%s", conc, diff)
		}
		if !res.Complete || res.Targets != 2 || res.ProbesSent != 4+5 || len(res.Errors) > 0 || len(res.ScanID) != 32 {
			t.Errorf("concurrency %d: %+v", conc, res)
		}
		if res.Ports != FormatPorts(ports) || res.Finished.Before(res.Started) {
			t.Errorf("ports %q, started %v finished %v", res.Ports, res.Started, res.Finished)
		}
	}
}

func sorted(ps ...uint16) []uint16 {
	slices.Sort(ps)
	return ps
}

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

// fakeConn is a connection the fake dialer hands out.
type fakeConn struct{ net.Conn }

func (fakeConn) Close() error { return nil }

func TestScanConcurrencyBound(t *testing.T) {
	var inFlight, peak atomic.Int32
	dial := func(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
		if ap.Port()%2 == 0 {
			return fakeConn{}, nil
		}
		return nil, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}
	}
	ports, _ := ParsePorts("1-100")
	res, err := scan(context.Background(), []Target{{IP: ip("192.0.2.1")}, {IP: ip("192.0.2.2")}}, Params{Ports: ports, Concurrency: 7}, dial)
	if err != nil {
		t.Fatal(err)
	}
	if peak.Load() != 7 {
		t.Errorf("peak of %d connections in flight, want 7", peak.Load())
	}
	if res.ProbesSent != 200 || len(res.Open[ip("192.0.2.1")]) != 50 || len(res.Open[ip("192.0.2.2")]) != 50 {
		t.Errorf("probes %d open %v", res.ProbesSent, res.Open)
	}
}

func TestScanOutcomes(t *testing.T) {
	dial := func(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
		switch ap.Addr() {
		case ip("192.0.2.1"): // there: 22 open, rest refused
			if ap.Port() == 22 {
				return fakeConn{}, nil
			}
			return nil, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}
		case ip("192.0.2.3"): // drops SYNs: all time out
			<-time.After(time.Millisecond)
			return nil, &net.OpError{Op: "dial", Err: timeoutErr{}}
		case ip("192.0.2.4"): // no route
			return nil, &net.OpError{Op: "dial", Err: syscall.EHOSTUNREACH}
		}
		return nil, errors.New("unexpected")
	}
	res, err := scan(context.Background(), []Target{{IP: ip("192.0.2.1")}, {IP: ip("192.0.2.3")}, {IP: ip("192.0.2.4")}},
		Params{Ports: []uint16{22, 80, 443}}, dial)
	if err != nil {
		t.Fatal(err)
	}
	want := map[netip.Addr][]uint16{ip("192.0.2.1"): {22}, ip("192.0.2.3"): {}}
	if diff := cmp.Diff(want, res.Open, cmpopts.EquateComparable(netip.Addr{})); diff != "" {
		t.Errorf("open (-want +got):\n%s", diff)
	}
	if !res.Complete || len(res.Errors) != 1 || res.Errors[0] != "192.0.2.4: unreachable (no route to host); its ports were not counted" {
		t.Errorf("complete %v errors %q", res.Complete, res.Errors)
	}

	// A local failure spoils the scan.
	res, err = scan(context.Background(), []Target{{IP: ip("192.0.2.1")}}, Params{Ports: []uint16{22, 80}},
		func(context.Context, netip.AddrPort) (net.Conn, error) {
			return nil, &net.OpError{Op: "dial", Err: syscall.EMFILE}
		})
	if err == nil || res.Complete || len(res.Open) != 0 || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "2 probes failed locally: too many open files") {
		t.Errorf("EMFILE: err %v complete %v open %v errors %q", err, res.Complete, res.Open, res.Errors)
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestScanCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var started atomic.Int32
	dial := func(ctx context.Context, ap netip.AddrPort) (net.Conn, error) {
		if started.Add(1) == 5 {
			cancel()
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	ports, _ := ParsePorts("1-1000")
	res, err := scan(ctx, []Target{{IP: ip("192.0.2.1")}}, Params{Ports: ports, Concurrency: 5}, dial)
	if !errors.Is(err, context.Canceled) || res.Complete || len(res.Open) != 0 || res.ProbesSent >= 1000 {
		t.Errorf("err %v complete %v open %v probes %d", err, res.Complete, res.Open, res.ProbesSent)
	}
}

func TestScanBadParams(t *testing.T) {
	for _, tt := range []struct {
		name    string
		targets []Target
		p       Params
		want    string
	}{
		{"no address", []Target{{}}, Params{Ports: []uint16{1}}, "target 0 has no address"},
		{"negative concurrency", nil, Params{Concurrency: -1}, "concurrency -1"},
		{"negative timeout", nil, Params{Timeout: -time.Second}, "timeout -1s"},
		{"port 0", nil, Params{Ports: []uint16{0}}, "port 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Scan(context.Background(), tt.targets, tt.p)
			if !errors.Is(err, ErrBadParams) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	res, err := Scan(context.Background(), nil, Params{})
	if err != nil || !res.Complete || len(res.Open) != 0 {
		t.Errorf("empty scan: %+v %v", res, err)
	}
}
