package devicesweep

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/arpsweep"
	"github.com/jocasta/jocasta/sources/icmpsweep"
	"github.com/jocasta/jocasta/sources/neighbour"
)

var (
	routed = netip.MustParsePrefix("198.51.100.0/24")
	lan6   = netip.MustParsePrefix("2001:db8::/120")
	eth0   = arpsweep.Link{Index: 2, Name: "eth0", MAC: mac("00:16:3e:00:00:02"), Addrs: []netip.Prefix{netip.MustParsePrefix("192.0.2.2/24")}}
)

// fakeARP answers like arpsweep on a link: each responder is passed to
// Found, then it waits until every responder has been sent echo requests
// (its Wait, cut short) and returns.
type fakeARP struct {
	t       *testing.T
	replies []arpsweep.Reply
	err     error
	echoed  func(n int) <-chan struct{} // closed once n addresses were echoed
	params  arpsweep.Params
	targets []arpsweep.Target
	closed  bool
}

func (f *fakeARP) Sweep(ctx context.Context, targets []arpsweep.Target, p arpsweep.Params) (arpsweep.Result, error) {
	f.targets, f.params = targets, p
	res := arpsweep.Result{Started: time.Now().UTC(), RequestsSent: 500, Replies: f.replies}
	if f.err != nil {
		return res, f.err
	}
	for _, r := range f.replies {
		if p.Found != nil {
			p.Found(r)
		}
	}
	if p.Found != nil {
		select {
		case <-f.echoed(len(f.replies)):
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(10 * time.Second):
			f.t.Error("responders were not sent echo requests")
		}
	}
	res.Finished = time.Now().UTC()
	return res, nil
}

func (f *fakeARP) Close() error { f.closed = true; return nil }

// fakeEcho answers echo requests from the addresses in rtt; a batch with
// a silent address waits for ctx, like a sweep sitting out its Wait.
type fakeEcho struct {
	mu     sync.Mutex
	rtt    map[netip.Addr]time.Duration
	seen   []netip.Addr
	notify []chan struct{}
	want   []int
	closed int
}

func (f *fakeEcho) waitFor(n int) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := make(chan struct{})
	if len(f.seen) >= n {
		close(c)
		return c
	}
	f.notify, f.want = append(f.notify, c), append(f.want, n)
	return c
}

type echoSock struct{ f *fakeEcho }

func (e echoSock) Sweep(ctx context.Context, prefixes []netip.Prefix, p icmpsweep.Params) (icmpsweep.Result, error) {
	f := e.f
	var res icmpsweep.Result
	silent := false
	f.mu.Lock()
	for _, pr := range prefixes {
		if pr.Bits() != 32 {
			panic("echo to " + pr.String())
		}
		res.ProbesSent++
		f.seen = append(f.seen, pr.Addr())
		if d, ok := f.rtt[pr.Addr()]; ok {
			res.Responders = append(res.Responders, icmpsweep.Responder{IP: pr.Addr(), Network: pr, RTT: d})
		} else {
			silent = true
		}
	}
	for i, c := range f.notify {
		if c != nil && len(f.seen) >= f.want[i] {
			close(c)
			f.notify[i] = nil
		}
	}
	f.mu.Unlock()
	if silent {
		<-ctx.Done()
		return res, ctx.Err()
	}
	return res, nil
}

func (e echoSock) Close() error {
	e.f.mu.Lock()
	defer e.f.mu.Unlock()
	e.f.closed++
	return nil
}

type arpTest struct {
	s     *Sweeper
	arp   *fakeARP
	echo  *fakeEcho
	icmp  []icmpsweep.Params
	nets  [][]netip.Prefix
	logs  []string
	links int
}

// newARPTest builds a Sweeper whose on-link network 192.0.2.0/24 is
// swept by a fake ARP sweep; the fake ICMP sweep answers from
// 198.51.100.7.
func newARPTest(t *testing.T, cfg Config, entries []neighbour.Entry) *arpTest {
	t.Helper()
	at := &arpTest{echo: &fakeEcho{rtt: map[netip.Addr]time.Duration{
		ip("192.0.2.2"): 20 * time.Microsecond, ip("192.0.2.10"): time.Millisecond,
	}}}
	at.arp = &fakeARP{t: t, echoed: at.echo.waitFor, replies: []arpsweep.Reply{
		{IP: ip("192.0.2.2"), MAC: mac("00:16:3e:00:00:02"), Network: lan, Interface: "eth0", Local: true},
		{IP: ip("192.0.2.10"), MAC: mac("00:16:3e:00:00:0a"), Network: lan, Interface: "eth0"},
		{IP: ip("192.0.2.13"), MAC: mac("02:42:0a:4d:00:0d"), Network: lan, Interface: "eth0"}, // drops ICMP
	}}
	cfg.Log = funcLogger(func(m string) { at.logs = append(at.logs, m) })
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.links = func() ([]arpsweep.Link, error) { at.links++; return []arpsweep.Link{eth0}, nil }
	s.openARP = func(ls []arpsweep.Link) (arpSweeper, error) {
		if len(ls) != 1 || ls[0].Name != "eth0" {
			t.Errorf("openARP(%+v)", ls)
		}
		return at.arp, nil
	}
	s.openEcho = func() (echoer, error) { return echoSock{at.echo}, nil }
	s.icmp = func(ctx context.Context, prefixes []netip.Prefix, p icmpsweep.Params) (icmpsweep.Result, error) {
		at.icmp = append(at.icmp, p)
		at.nets = append(at.nets, prefixes)
		res := icmpsweep.Result{Started: time.Now().UTC(), ProbesSent: 300}
		if slices.Contains(prefixes, routed) {
			res.Responders = append(res.Responders, icmpsweep.Responder{IP: ip("198.51.100.7"), Network: routed, RTT: 5 * time.Millisecond})
		}
		return res, nil
	}
	s.neighbours = func() ([]neighbour.Entry, error) { return entries, nil }
	s.localMACs = func() map[netip.Addr]net.HardwareAddr {
		return map[netip.Addr]net.HardwareAddr{ip("192.0.2.2"): mac("00:16:3e:00:00:02")}
	}
	at.s = s
	return at
}

// The on-link network is swept with ARP (every responder present, with
// its MAC, via "arp"; an RTT for those that answer echo), the routed and
// IPv6 networks with ICMP side by side at a share of the rate; probes of
// every kind are counted; each network's mode is logged once.
func TestRunARP(t *testing.T) {
	entries := []neighbour.Entry{
		// confirmed during the sweep: answered the kernel, not us
		{IP: ip("192.0.2.50"), MAC: mac("00:16:3e:00:00:32"), State: neighbour.Reachable},
		// confirmed an hour ago, silent now: a host that left
		{IP: ip("192.0.2.51"), MAC: mac("00:16:3e:00:00:33"), State: neighbour.Stale, Confirmed: time.Hour},
		// 192.0.2.10's MAC at another address: what remains of a move
		{IP: ip("192.0.2.52"), MAC: mac("00:16:3e:00:00:0a"), State: neighbour.Stale},
		// a MAC for a host found by ARP: the ARP reply wins
		{IP: ip("192.0.2.10"), MAC: mac("00:16:3e:00:99:99"), State: neighbour.Stale},
	}
	for _, resolve := range []bool{true, false} {
		t.Run(fmt.Sprintf("resolve_macs=%v", resolve), func(t *testing.T) {
			var calls []string
			at := newARPTest(t, Config{Networks: []netip.Prefix{lan, routed, lan6}, Rate: 1200, Wait: time.Hour, ResolveMACs: resolve,
				Enrichers: []sources.Enricher{recorder{"dns", &calls, nil}}}, entries)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			sw, err := at.s.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			m := func(s string) string {
				if !resolve {
					return ""
				}
				return s
			}
			want := []hostView{
				{"192.0.2.2", "192.0.2.0/24", m("00:16:3e:00:00:02"), "arp", 20 * time.Microsecond},
				{"192.0.2.10", "192.0.2.0/24", m("00:16:3e:00:00:0a"), "arp", time.Millisecond},
				{"192.0.2.13", "192.0.2.0/24", m("02:42:0a:4d:00:0d"), "arp", 0},
				{"192.0.2.50", "192.0.2.0/24", m("00:16:3e:00:00:32"), "neighbour", 0},
				{"198.51.100.7", "198.51.100.0/24", "", "icmp", 5 * time.Millisecond},
			}
			if got := view(sw.Hosts); !slices.Equal(got, want) {
				t.Errorf("hosts\n%v\nwant\n%v", got, want)
			}
			// 500 ARP requests, 3 echo requests, 300 ICMP probes.
			if !sw.Complete || len(sw.Errors) > 0 || sw.ProbesSent != 803 {
				t.Errorf("complete %v, errors %q, probes %d", sw.Complete, sw.Errors, sw.ProbesSent)
			}
			// The rate is shared by addresses: 256 ARP, 512 ICMP.
			if at.arp.params.Rate != 400 || len(at.icmp) != 1 || at.icmp[0].Rate != 800 || at.arp.params.Rounds != 2 || at.arp.params.Wait != time.Hour {
				t.Errorf("ARP params %+v, ICMP params %+v", at.arp.params, at.icmp)
			}
			if len(at.nets) != 1 || !slices.Equal(at.nets[0], []netip.Prefix{routed, lan6}) {
				t.Errorf("ICMP swept %v", at.nets)
			}
			if len(at.arp.targets) != 1 || at.arp.targets[0].Prefix != lan || !at.arp.closed || at.echo.closed != echoWorkers {
				t.Errorf("ARP targets %+v, closed %v, echo sockets closed %d", at.arp.targets, at.arp.closed, at.echo.closed)
			}
			wantLogs := []string{
				"devicesweep: 192.0.2.0/24: ARP sweep on eth0 from 192.0.2.2, ICMP echo to the hosts that answer",
				"devicesweep: 198.51.100.0/24: ICMP sweep (not wholly on a local link)",
				"devicesweep: 2001:db8::/120: ICMP sweep (IPv6: no ARP)",
				"devicesweep: neighbour entry 192.0.2.51 (00:16:3e:00:00:33, STALE) left out: it did not answer the ARP sweep and was last confirmed 1h0m0s ago",
				"devicesweep: neighbour entry 192.0.2.52 (00:16:3e:00:00:0a, STALE) left out: that MAC answered ARP at 192.0.2.10",
			}
			if !slices.Equal(at.logs, wantLogs) {
				t.Errorf("logs\n%q\nwant\n%q", at.logs, wantLogs)
			}
			if want := []string{"dns:5"}; !slices.Equal(calls, want) {
				t.Errorf("enricher calls %v", calls)
			}

			// A second sweep logs no mode again.
			at.logs = nil
			if _, err := at.s.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(at.logs, func(l string) bool {
				return strings.Contains(l, ": ARP sweep on") || strings.Contains(l, ": ICMP sweep (")
			}) {
				t.Errorf("second sweep logged %q", at.logs)
			}
		})
	}
}

// Without CAP_NET_RAW (or with ARP disabled) every network is swept with
// ICMP at the full rate, as before, and the reason is logged.
func TestRunARPFallback(t *testing.T) {
	t.Run("no CAP_NET_RAW", func(t *testing.T) {
		at := newARPTest(t, Config{Networks: []netip.Prefix{lan, routed}, Rate: 1000}, nil)
		at.s.openARP = func([]arpsweep.Link) (arpSweeper, error) {
			return nil, fmt.Errorf("%w: open a packet socket on eth0: operation not permitted", arpsweep.ErrNotPermitted)
		}
		sw, err := at.s.Run(context.Background())
		if err != nil || !sw.Complete {
			t.Fatal(err)
		}
		if len(at.nets) != 1 || !slices.Equal(at.nets[0], []netip.Prefix{lan, routed}) || at.icmp[0].Rate != 1000 || at.arp.params.Rate != 0 {
			t.Errorf("ICMP swept %v at %+v; ARP params %+v", at.nets, at.icmp, at.arp.params)
		}
		want := "devicesweep: 192.0.2.0/24: ICMP sweep (arpsweep: sending ARP needs CAP_NET_RAW (root, or setcap cap_net_raw+ep): open a packet socket on eth0: operation not permitted)"
		if !slices.Contains(at.logs, want) {
			t.Errorf("logs %q lack %q", at.logs, want)
		}
		if len(sw.Hosts) != 1 || sw.Hosts[0].Via != sources.ViaICMP {
			t.Errorf("hosts %v", view(sw.Hosts))
		}
	})
	t.Run("disabled", func(t *testing.T) {
		at := newARPTest(t, Config{Networks: []netip.Prefix{lan}, DisableARP: true}, nil)
		if _, err := at.s.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if at.links != 0 || len(at.nets) != 1 || at.arp.params.Rate != 0 || !slices.Equal(at.logs, []string{"devicesweep: 192.0.2.0/24: ICMP sweep (ARP disabled)"}) {
			t.Errorf("links read %d times, ICMP %v, logs %q", at.links, at.nets, at.logs)
		}
	})
	t.Run("interfaces unreadable", func(t *testing.T) {
		at := newARPTest(t, Config{Networks: []netip.Prefix{lan}}, nil)
		at.s.links = func() ([]arpsweep.Link, error) { return nil, errors.New("arpsweep: list interfaces: netlink: boom") }
		if _, err := at.s.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(at.nets) != 1 || !slices.Equal(at.logs, []string{"devicesweep: 192.0.2.0/24: ICMP sweep (ARP: arpsweep: list interfaces: netlink: boom)"}) {
			t.Errorf("ICMP %v, logs %q", at.nets, at.logs)
		}
	})
}

func TestRunARPFailures(t *testing.T) {
	t.Run("ARP socket fails", func(t *testing.T) {
		at := newARPTest(t, Config{Networks: []netip.Prefix{lan, routed}}, nil)
		boom := errors.New("arpsweep: receive: boom")
		at.arp.err = boom
		icmpCancelled := false
		at.s.icmp = func(ctx context.Context, _ []netip.Prefix, _ icmpsweep.Params) (icmpsweep.Result, error) {
			<-ctx.Done() // the ARP failure ends the ICMP sweep too
			icmpCancelled = true
			return icmpsweep.Result{ProbesSent: 3}, ctx.Err()
		}
		sw, err := at.s.Run(context.Background())
		if !errors.Is(err, boom) || sw.Complete || !icmpCancelled || !slices.Contains(sw.Errors, boom.Error()) {
			t.Errorf("err %v, sweep %+v", err, sw)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		at := newARPTest(t, Config{Networks: []netip.Prefix{lan}}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		at.arp.echoed = func(int) <-chan struct{} { cancel(); return make(chan struct{}) }
		sw, err := at.s.Run(ctx)
		if !errors.Is(err, context.Canceled) || sw.Complete {
			t.Errorf("err %v, sweep %+v", err, sw)
		}
	})
	t.Run("no echo socket", func(t *testing.T) {
		at := newARPTest(t, Config{Networks: []netip.Prefix{lan}}, nil)
		at.s.openEcho = func() (echoer, error) { return nil, icmpsweep.ErrNoICMP }
		sw, err := at.s.Run(context.Background())
		if err != nil || !sw.Complete || len(sw.Hosts) != 3 || sw.Hosts[1].RTT != 0 || len(sw.Errors) != 1 || !strings.HasPrefix(sw.Errors[0], "echo to ARP responders: icmp: cannot open") {
			t.Errorf("err %v, sweep %+v", err, sw)
		}
	})
}

func TestSplitRate(t *testing.T) {
	p := netip.MustParsePrefix
	tests := []struct {
		rate       int
		arp, icmp  []netip.Prefix
		wantA, wtI int
	}{
		{1000, []netip.Prefix{p("10.0.0.0/22")}, nil, 1000, 0},
		{1000, nil, []netip.Prefix{p("10.0.0.0/22")}, 0, 1000},
		{1000, []netip.Prefix{p("10.0.0.0/22")}, []netip.Prefix{p("10.1.0.0/22")}, 500, 500},
		{1000, []netip.Prefix{p("10.0.0.0/22")}, []netip.Prefix{p("10.1.0.0/24"), p("2001:db8::/120")}, 667, 333},
		{1000, []netip.Prefix{p("10.0.0.0/8")}, []netip.Prefix{p("10.1.0.0/30")}, 999, 1}, // each gets at least 1
		{1, []netip.Prefix{p("10.0.0.0/24")}, []netip.Prefix{p("10.1.0.0/24")}, 1, 1},
	}
	for _, tt := range tests {
		if a, i := splitRate(tt.rate, tt.arp, tt.icmp); a != tt.wantA || i != tt.wtI {
			t.Errorf("splitRate(%d, %v, %v) = %d, %d; want %d, %d", tt.rate, tt.arp, tt.icmp, a, i, tt.wantA, tt.wtI)
		}
	}
}
