package devicesweep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/arpsweep"
	"github.com/jocasta/jocasta/sources/icmpsweep"
	"github.com/jocasta/jocasta/sources/neighbour"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	lan  = netip.MustParsePrefix("192.0.2.0/24")
	lan2 = netip.MustParsePrefix("192.0.2.128/25")
)

func mac(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

// recorder is an Enricher that names every host and remembers its calls.
type recorder struct {
	name  string
	calls *[]string
	err   error
}

func (r recorder) Name() string { return r.name }
func (r recorder) Enrich(ctx context.Context, hosts []*sources.Host) error {
	*r.calls = append(*r.calls, fmt.Sprintf("%s:%d", r.name, len(hosts)))
	for _, h := range hosts {
		h.SetName(r.name, r.name+"-"+h.IP.String())
	}
	return r.err
}

func newTest(t *testing.T, cfg Config, res icmpsweep.Result, icmpErr error, entries []neighbour.Entry, nerr error) *Sweeper {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.icmp = func(ctx context.Context, prefixes []netip.Prefix, p icmpsweep.Params) (icmpsweep.Result, error) {
		if !slices.Equal(prefixes, s.networks) || p.Rate != s.cfg.Rate || p.Rounds != s.cfg.Rounds || p.Wait != s.cfg.Wait {
			t.Errorf("icmp sweep called with %v %+v", prefixes, p)
		}
		return res, icmpErr
	}
	s.neighbours = func() ([]neighbour.Entry, error) { return entries, nerr }
	// No ARP: these tests run in the host's namespace, whose own networks
	// must never be swept.
	s.links = func() ([]arpsweep.Link, error) { return nil, nil }
	s.localMACs = func() map[netip.Addr]net.HardwareAddr {
		return map[netip.Addr]net.HardwareAddr{ip("192.0.2.2"): mac("00:16:3e:00:00:02")}
	}
	return s
}

type hostView struct {
	IP, Network, MAC, Via string
	RTT                   time.Duration
}

func view(hs []*sources.Host) []hostView {
	var out []hostView
	for _, h := range hs {
		out = append(out, hostView{h.IP.String(), h.Network.String(), h.MAC.String(), h.Via, h.RTT})
	}
	return out
}

func TestRunMergesICMPAndNeighbours(t *testing.T) {
	res := icmpsweep.Result{
		ProbesSent: 300,
		Responders: []icmpsweep.Responder{
			{IP: ip("192.0.2.2"), Network: lan, RTT: 10 * time.Microsecond},
			{IP: ip("192.0.2.10"), Network: lan, RTT: time.Millisecond},
			{IP: ip("192.0.2.140"), Network: lan2, RTT: 2 * time.Millisecond},
			{IP: ip("192.0.2.99"), Network: lan, RTT: 3 * time.Millisecond},
		},
		Errors: []string{"network x: 1 probes not sent"},
	}
	entries := []neighbour.Entry{
		{IP: ip("192.0.2.10"), MAC: mac("00:16:3e:00:00:0a"), State: neighbour.Reachable},
		{IP: ip("192.0.2.140"), MAC: mac("00:16:3e:00:00:8c"), State: neighbour.Stale},
		// dropped ICMP, answered ARP
		{IP: ip("192.0.2.13"), MAC: mac("02:42:0a:4d:00:0d"), State: neighbour.Reachable},
		{IP: ip("192.0.2.200"), MAC: mac("00:16:3e:00:00:c8"), State: neighbour.Delay},
		// what is left of 192.0.2.10's old address: same MAC, left out
		{IP: ip("192.0.2.14"), MAC: mac("00:16:3e:00:00:0a"), State: neighbour.Stale},
		// not evidence
		{IP: ip("192.0.2.20"), State: neighbour.Failed},
		{IP: ip("192.0.2.21"), MAC: mac("00:16:3e:00:00:15"), State: neighbour.Permanent},
		{IP: ip("198.51.100.1"), MAC: mac("00:16:3e:00:00:99"), State: neighbour.Reachable},
	}
	tests := []struct {
		resolveMACs bool
		want        []hostView
	}{
		{true, []hostView{
			{"192.0.2.2", "192.0.2.0/24", "00:16:3e:00:00:02", "icmp", 10 * time.Microsecond},
			{"192.0.2.10", "192.0.2.0/24", "00:16:3e:00:00:0a", "icmp", time.Millisecond},
			{"192.0.2.13", "192.0.2.0/24", "02:42:0a:4d:00:0d", "neighbour", 0},
			{"192.0.2.99", "192.0.2.0/24", "", "icmp", 3 * time.Millisecond},
			{"192.0.2.140", "192.0.2.128/25", "00:16:3e:00:00:8c", "icmp", 2 * time.Millisecond},
			{"192.0.2.200", "192.0.2.128/25", "00:16:3e:00:00:c8", "neighbour", 0},
		}},
		{false, []hostView{
			{"192.0.2.2", "192.0.2.0/24", "", "icmp", 10 * time.Microsecond},
			{"192.0.2.10", "192.0.2.0/24", "", "icmp", time.Millisecond},
			{"192.0.2.13", "192.0.2.0/24", "", "neighbour", 0},
			{"192.0.2.99", "192.0.2.0/24", "", "icmp", 3 * time.Millisecond},
			{"192.0.2.140", "192.0.2.128/25", "", "icmp", 2 * time.Millisecond},
			{"192.0.2.200", "192.0.2.128/25", "", "neighbour", 0},
		}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("resolve_macs=%v", tt.resolveMACs), func(t *testing.T) {
			var calls []string
			var logs []string
			s := newTest(t, Config{
				Networks:    []netip.Prefix{lan, lan2, lan},
				ResolveMACs: tt.resolveMACs,
				Enrichers:   []sources.Enricher{recorder{"dns", &calls, nil}, recorder{"mdns", &calls, errors.New("socket gone")}, recorder{"netbios", &calls, nil}},
				Log:         funcLogger(func(m string) { logs = append(logs, m) }),
			}, res, nil, entries, nil)
			sw, err := s.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := view(sw.Hosts); !slices.Equal(got, tt.want) {
				t.Errorf("hosts\n%v\nwant\n%v", got, tt.want)
			}
			if !sw.Complete || sw.ProbesSent != 300 || len(sw.ScanID) != 32 || sw.Finished.Before(sw.Started) || sw.Started.Location() != time.UTC {
				t.Errorf("sweep %+v", sw)
			}
			if !slices.Equal(sw.Networks, []netip.Prefix{lan, lan2}) {
				t.Errorf("networks %v", sw.Networks)
			}
			if want := []string{"dns:6", "mdns:6", "netbios:6"}; !slices.Equal(calls, want) {
				t.Errorf("enricher calls %v, want %v", calls, want)
			}
			if want := []string{"network x: 1 probes not sent", "resolver mdns: socket gone"}; !slices.Equal(sw.Errors, want) {
				t.Errorf("errors %q, want %q", sw.Errors, want)
			}
			if sw.Hosts[0].Names["netbios"] != "netbios-192.0.2.2" {
				t.Errorf("names %v", sw.Hosts[0].Names)
			}
			// Besides the sweep mode of each network (first sweep), one line.
			logs = slices.DeleteFunc(logs, func(l string) bool { return strings.Contains(l, "ICMP sweep (not wholly on a local link)") })
			if len(logs) != 1 || !strings.Contains(logs[0], "192.0.2.14") || !strings.Contains(logs[0], "192.0.2.10") {
				t.Errorf("logs %q", logs)
			}
		})
	}
}

func TestRunFailures(t *testing.T) {
	t.Run("no ICMP socket", func(t *testing.T) {
		var calls []string
		s := newTest(t, Config{Networks: []netip.Prefix{lan}, Enrichers: []sources.Enricher{recorder{"dns", &calls, nil}}},
			icmpsweep.Result{}, fmt.Errorf("open: %w", icmpsweep.ErrNoICMP), nil, nil)
		sw, err := s.Run(context.Background())
		if !errors.Is(err, icmpsweep.ErrNoICMP) || sw == nil || sw.Complete || len(sw.Errors) != 1 || len(calls) != 0 {
			t.Errorf("err %v sweep %+v calls %v", err, sw, calls)
		}
	})
	t.Run("cancelled during ICMP", func(t *testing.T) {
		s := newTest(t, Config{Networks: []netip.Prefix{lan}},
			icmpsweep.Result{ProbesSent: 7, Responders: []icmpsweep.Responder{{IP: ip("192.0.2.1"), Network: lan, RTT: 1}}}, context.Canceled, nil, nil)
		sw, err := s.Run(context.Background())
		if !errors.Is(err, context.Canceled) || sw.Complete || sw.ProbesSent != 7 || len(sw.Hosts) != 1 {
			t.Errorf("err %v sweep %+v", err, sw)
		}
	})
	t.Run("cancelled during enrichers", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var calls []string
		cancelling := enricherFunc{"dns", func(context.Context, []*sources.Host) error { cancel(); return context.Canceled }}
		s := newTest(t, Config{Networks: []netip.Prefix{lan}, Enrichers: []sources.Enricher{cancelling, recorder{"mdns", &calls, nil}}},
			icmpsweep.Result{}, nil, nil, nil)
		sw, err := s.Run(ctx)
		if !errors.Is(err, context.Canceled) || sw.Complete || len(calls) != 0 || len(sw.Errors) != 0 {
			t.Errorf("err %v sweep %+v calls %v", err, sw, calls)
		}
	})
	t.Run("neighbour table unreadable", func(t *testing.T) {
		s := newTest(t, Config{Networks: []netip.Prefix{lan}},
			icmpsweep.Result{Responders: []icmpsweep.Responder{{IP: ip("192.0.2.1"), Network: lan, RTT: 1}}}, nil, nil, errors.New("netlink: permission denied"))
		sw, err := s.Run(context.Background())
		if err != nil || !sw.Complete || len(sw.Hosts) != 1 || len(sw.Errors) != 1 {
			t.Errorf("err %v sweep %+v", err, sw)
		}
	})
}

type enricherFunc struct {
	name string
	f    func(context.Context, []*sources.Host) error
}

func (e enricherFunc) Name() string                                         { return e.name }
func (e enricherFunc) Enrich(ctx context.Context, hs []*sources.Host) error { return e.f(ctx, hs) }

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"no networks", Config{}, []string{"networks: empty"}},
		{"too large", Config{Networks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/6")}}, []string{"10.0.0.0/6 has 2^26 addresses"}},
		{"bad pacing, all at once", Config{Networks: []netip.Prefix{lan}, Rate: -1, Rounds: -2, Wait: -time.Second},
			[]string{"rate -1", "rounds -2", "wait -1s"}},
		{"nil enricher and bad mode", Config{Networks: []netip.Prefix{lan}, Enrichers: []sources.Enricher{nil}, ICMPMode: "magic"},
			[]string{"enricher 0 is nil", `ICMP mode "magic"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("err = %v, want ErrConfig", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	var logs []string
	s, err := New(Config{Networks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, Log: funcLogger(func(m string) { logs = append(logs, m) })})
	if err != nil {
		t.Fatal(err)
	}
	if s.cfg.Rate != 1000 || s.cfg.Rounds != 2 || s.cfg.Wait != 2*time.Second {
		t.Errorf("defaults %+v", s.cfg)
	}
	if want := "devicesweep: network 10.0.0.0/8 has 16777214 addresses; at 1000 probes/s a sweep takes 9h19m"; !slices.Equal(logs, []string{want}) {
		t.Errorf("logs %q, want %q", logs, want)
	}
}

func TestRecheck(t *testing.T) {
	s, err := New(Config{Networks: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/23"), netip.MustParsePrefix("198.51.100.0/24")}})
	if err != nil {
		t.Fatal(err)
	}
	s.onLink = func() ([]netip.Prefix, error) { return []netip.Prefix{lan}, nil } // 192.0.3.0/24 is routed
	s.neighbours = func() ([]neighbour.Entry, error) {
		return []neighbour.Entry{
			{IP: ip("192.0.2.10"), MAC: mac("02:00:00:00:00:0a"), State: neighbour.Reachable},
			{IP: ip("192.0.2.11"), MAC: mac("02:00:00:00:00:0b"), State: neighbour.Stale},
			{IP: ip("192.0.2.12"), State: neighbour.Failed},
			{IP: ip("192.0.2.13"), State: neighbour.Incomplete},
		}, nil
	}
	again, err := s.recheck()
	if err != nil {
		t.Fatal(err)
	}
	for a, want := range map[string]bool{
		"192.0.2.10": true, "192.0.2.11": true, // resolved: dropped or lost the echo
		"192.0.2.12": false, "192.0.2.13": false, "192.0.2.14": false, // ARP failed, pending or long gone
		"192.0.3.9": true, "198.51.100.1": true, // off-link: probe again
	} {
		if got := again(ip(a)); got != want {
			t.Errorf("probe %s again = %v, want %v", a, got, want)
		}
	}
	s.onLink = func() ([]netip.Prefix, error) { return nil, nil }
	if again, err := s.recheck(); again != nil || err != nil {
		t.Errorf("no on-link prefix: %v, %v; want every address again", again != nil, err)
	}
	s.onLink = func() ([]netip.Prefix, error) { return nil, errors.New("netlink: no") }
	if again, err := s.recheck(); again != nil || err == nil {
		t.Errorf("route read failure: %v, %v", again != nil, err)
	}
}

// funcLogger is a logger that hands each message to f (one goroutine at a
// time: the sweeper logs from its calling goroutine).
func funcLogger(f func(msg string)) *slog.Logger { return slog.New(funcHandler(f)) }

type funcHandler func(string)

func (h funcHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h funcHandler) Handle(_ context.Context, r slog.Record) error {
	h(r.Message)
	return nil
}
func (h funcHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h funcHandler) WithGroup(string) slog.Handler      { return h }
