package flowlistener

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	fg "github.com/jocasta/jocasta/sources/flowlistener/flowgen"
)

var (
	t0   = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	lan  = netip.MustParseAddr("192.0.2.10")
	wan  = netip.MustParseAddr("198.51.100.7")
	lan6 = netip.MustParseAddr("2001:db8::10")
	wan6 = netip.MustParseAddr("2001:db8:ffff::7")
)

func rec(src, dst netip.Addr, sport, dport uint16, bytes, pkts uint64) fg.Rec {
	return fg.Rec{Src: src, Dst: dst, Proto: 6, SrcPort: sport, DstPort: dport, Bytes: bytes, Packets: pkts}
}

// run decodes datagrams (each at its offset from t0) and returns the
// flows as text, the drops by name and the estimated loss.
type step struct {
	at time.Duration
	b  []byte
}

func run(t *testing.T, lifetime time.Duration, steps ...step) (flows []string, drops map[string]uint64, lost uint64, ex *exporter) {
	t.Helper()
	d := &decoder{lifetime: lifetime}
	d.sink = func(f *flow) {
		flows = append(flows, fmt.Sprintf("%s:%d>%s:%d/%d %dB %dp", f.src, f.srcPort, f.dst, f.dstPort, f.proto, f.bytes, f.packets))
	}
	ex = &exporter{addr: netip.MustParseAddr("192.0.2.1"), domains: map[uint64]*domain{}}
	for _, s := range steps {
		d.datagram(ex, s.b, t0.Add(s.at))
	}
	drops = map[string]uint64{}
	for i, n := range d.drops {
		if n > 0 {
			drops[dropNames[i]] = n
		}
	}
	return flows, drops, d.lost, ex
}

func TestDecode(t *testing.T) {
	r1 := rec(lan, wan, 50000, 443, 1500, 10)
	r2 := rec(wan, lan, 443, 50000, 90000, 60)
	r6 := rec(lan6, wan6, 40000, 53, 700, 7)
	r6.Proto = 17
	samp := []fg.Field{{Type: 34, Len: 4}, {Type: 35, Len: 1}}
	sampScope := []fg.Field{{Type: 1, Len: 4}} // v9 scope: system
	ipfixScope := []fg.Field{{Type: 149, Len: 4}}
	ipfixSamp := []fg.Field{{Type: 305, Len: 4}, {Type: 306, Len: 4}}
	tests := []struct {
		name  string
		life  time.Duration
		steps []step
		flows []string
		drops map[string]uint64
		lost  uint64
	}{
		{
			name:  "v5",
			steps: []step{{0, fg.V5(100, 0, []fg.Rec{r1, r2})}},
			flows: []string{"192.0.2.10:50000>198.51.100.7:443/6 1500B 10p", "198.51.100.7:443>192.0.2.10:50000/6 90000B 60p"},
		},
		{
			name:  "v5 sampled 1 in 100, and a gap of 5 flows",
			steps: []step{{0, fg.V5(100, 100, []fg.Rec{r1})}, {time.Second, fg.V5(106, 100, []fg.Rec{r1})}},
			flows: []string{"192.0.2.10:50000>198.51.100.7:443/6 150000B 1000p", "192.0.2.10:50000>198.51.100.7:443/6 150000B 1000p"},
			lost:  5,
		},
		{
			name:  "v5 count larger than the datagram",
			steps: []step{{0, fg.V5(1, 0, []fg.Rec{r1, r2})[:24+48]}},
			drops: map[string]uint64{"short": 1},
		},
		{
			name:  "v9 template and data in one packet",
			steps: []step{{0, fg.NewV9(1, 7).Template(256, fg.V4).Data(256, fg.V4, []fg.Rec{r1, r2}, 0).Bytes()}},
			flows: []string{"192.0.2.10:50000>198.51.100.7:443/6 1500B 10p", "198.51.100.7:443>192.0.2.10:50000/6 90000B 60p"},
		},
		{
			name: "v9 data before its template is held, then decoded",
			steps: []step{
				{0, fg.NewV9(1, 7).Data(256, fg.V4, []fg.Rec{r1}, 0).Bytes()},
				{time.Second, fg.NewV9(2, 7).Template(256, fg.V4).Bytes()},
			},
			flows: []string{"192.0.2.10:50000>198.51.100.7:443/6 1500B 10p"},
		},
		{
			name: "v9 templates are per source id",
			steps: []step{
				{0, fg.NewV9(1, 7).Template(256, fg.V4).Bytes()},
				{0, fg.NewV9(1, 8).Data(256, fg.V6, []fg.Rec{r6}, 0).Bytes()},
				{0, fg.NewV9(2, 7).Data(256, fg.V4, []fg.Rec{r1}, 0).Bytes()},
			},
			flows: []string{"192.0.2.10:50000>198.51.100.7:443/6 1500B 10p"},
		},
		{
			name: "v9 sampling from an options template, IPv6, padding",
			steps: []step{{0, fg.NewV9(1, 7).
				OptionsTemplate(257, sampScope, samp).OptionsData(257, sampScope, samp, [][]uint64{{0, 10, 2}}).
				Template(258, fg.V6).Data(258, fg.V6, []fg.Rec{r6}, 3).Bytes()}},
			flows: []string{"2001:db8::10:40000>2001:db8:ffff::7:53/17 7000B 70p"},
		},
		{
			name: "v9 packet sequence gap: lost packets times flows per packet",
			steps: []step{
				{0, fg.NewV9(10, 7).Template(256, fg.V4).Data(256, fg.V4, []fg.Rec{r1, r2}, 0).Bytes()},
				{time.Second, fg.NewV9(13, 7).Data(256, fg.V4, []fg.Rec{r1, r2}, 0).Bytes()},
			},
			flows: []string{"192.0.2.10:50000>198.51.100.7:443/6 1500B 10p", "198.51.100.7:443>192.0.2.10:50000/6 90000B 60p", "192.0.2.10:50000>198.51.100.7:443/6 1500B 10p", "198.51.100.7:443>192.0.2.10:50000/6 90000B 60p"},
			lost:  4,
		},
		{
			name: "v9 template expires without refresh",
			life: time.Minute,
			steps: []step{
				{0, fg.NewV9(1, 7).Template(256, fg.V4).Bytes()},
				{2 * time.Minute, fg.NewV9(2, 7).Data(256, fg.V4, []fg.Rec{r1}, 0).Bytes()},
			},
			drops: map[string]uint64{"template_expired": 1},
		},
		{
			name: "v9 template refreshed in time",
			life: time.Minute,
			steps: []step{
				{0, fg.NewV9(1, 7).Template(256, fg.V4).Bytes()},
				{50 * time.Second, fg.NewV9(2, 7).Template(256, fg.V4).Bytes()},
				{100 * time.Second, fg.NewV9(3, 7).Data(256, fg.V4, []fg.Rec{r1}, 0).Bytes()},
			},
			flows: []string{"192.0.2.10:50000>198.51.100.7:443/6 1500B 10p"},
		},
		{
			name:  "IPFIX enterprise and variable-length fields, reduced-size counters",
			steps: []step{{0, fg.NewIPFIX(0, 1).Template(300, fg.Odd).Data(300, fg.Odd, []fg.Rec{r1}, 0).Bytes()}},
			flows: []string{"192.0.2.10:50000>198.51.100.7:443/6 1500B 10p"},
		},
		{
			name: "IPFIX withdrawal: data after it waits for a new template",
			steps: []step{
				{0, fg.NewIPFIX(0, 1).Template(300, fg.V4).Data(300, fg.V4, []fg.Rec{r1}, 0).Bytes()},
				{time.Second, fg.NewIPFIX(1, 1).Withdraw(300).Bytes()},
				{2 * time.Second, fg.NewIPFIX(1, 1).Data(300, fg.V4, []fg.Rec{r2}, 0).Bytes()},
			},
			flows: []string{"192.0.2.10:50000>198.51.100.7:443/6 1500B 10p"},
		},
		{
			name: "IPFIX sampling (interval+space)/interval and record sequence gap",
			steps: []step{
				{0, fg.NewIPFIX(0, 1).OptionsTemplate(400, ipfixScope, ipfixSamp).OptionsData(400, ipfixScope, ipfixSamp, [][]uint64{{1, 1, 3}}).
					Template(300, fg.V6).Data(300, fg.V6, []fg.Rec{r6}, 0).Bytes()},
				{time.Second, fg.NewIPFIX(2+7, 1).Data(300, fg.V6, []fg.Rec{r6}, 0).Bytes()},
			},
			flows: []string{"2001:db8::10:40000>2001:db8:ffff::7:53/17 2800B 28p", "2001:db8::10:40000>2001:db8:ffff::7:53/17 2800B 28p"},
			lost:  7,
		},
		{
			name:  "IPFIX length past the datagram",
			steps: []step{{0, fg.NewIPFIX(0, 1).Template(300, fg.V4).Bytes()[:20]}},
			drops: map[string]uint64{"short": 1},
		},
		{
			name:  "set length past the message",
			steps: []step{{0, append(fg.NewV9(1, 7).Bytes(), 1, 0, 0xff, 0xff)}},
			drops: map[string]uint64{"malformed": 1},
		},
		{
			name:  "template with a field count beyond the set",
			steps: []step{{0, fg.NewV9(1, 7).Raw(0, []byte{1, 0, 0xff, 0xff, 0, 8, 0, 4}).Bytes()}},
			drops: map[string]uint64{"malformed": 1},
		},
		{
			name:  "unknown version",
			steps: []step{{0, []byte{0, 7, 0, 0}}},
			drops: map[string]uint64{"version": 1},
		},
		{
			name: "data without addresses",
			steps: []step{{0, fg.NewV9(1, 7).Template(256, []fg.Field{{Type: 1, Len: 4}, {Type: 2, Len: 4}}).
				Data(256, []fg.Field{{Type: 1, Len: 4}, {Type: 2, Len: 4}}, []fg.Rec{r1}, 0).Bytes()}},
			drops: map[string]uint64{"no_address": 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			flows, drops, lost, _ := run(t, tc.life, tc.steps...)
			if strings.Join(flows, "\n") != strings.Join(tc.flows, "\n") {
				t.Errorf("flows:\n%s\nwant:\n%s", strings.Join(flows, "\n"), strings.Join(tc.flows, "\n"))
			}
			want := tc.drops
			if want == nil {
				want = map[string]uint64{}
			}
			if fmt.Sprint(drops) != fmt.Sprint(want) {
				t.Errorf("drops %v, want %v", drops, want)
			}
			if lost != tc.lost {
				t.Errorf("lost %d, want %d", lost, tc.lost)
			}
		})
	}
}

// A data set that never gets its template is dropped and counted once
// the hold buffer is full.
func TestPendingBounded(t *testing.T) {
	r1 := rec(lan, wan, 50000, 443, 1500, 10)
	var steps []step
	for i := 0; i < maxPendingSets+3; i++ {
		steps = append(steps, step{0, fg.NewV9(uint32(i), 7).Data(256, fg.V4, []fg.Rec{r1}, 0).Bytes()})
	}
	_, drops, _, ex := run(t, 0, steps...)
	if drops["no_template"] != 3 {
		t.Fatalf("drops %v, want 3 no_template", drops)
	}
	for _, dm := range ex.domains {
		if len(dm.pending) != maxPendingSets || dm.pendingBytes > maxPendingBytes {
			t.Fatalf("pending %d sets %d bytes", len(dm.pending), dm.pendingBytes)
		}
	}
}

// Templates per domain and domains per exporter are bounded.
func TestLimits(t *testing.T) {
	var steps []step
	for i := 0; i < maxDomains+5; i++ {
		steps = append(steps, step{0, fg.NewV9(0, uint32(i)).Template(256, fg.V4).Bytes()})
	}
	_, drops, _, ex := run(t, 0, steps...)
	if len(ex.domains) != maxDomains || drops["limits"] != 5 {
		t.Fatalf("%d domains, drops %v; want %d and 5 limits", len(ex.domains), drops, maxDomains)
	}
	steps = nil
	for i := 0; i < maxTemplates+5; i += 100 { // one message cannot hold them all
		m := fg.NewIPFIX(0, 1)
		for j := i; j < i+100 && j < maxTemplates+5; j++ {
			m.Template(uint16(256+j), fg.V4)
		}
		steps = append(steps, step{0, m.Bytes()})
	}
	_, drops, _, ex = run(t, 0, steps...)
	for _, dm := range ex.domains {
		if len(dm.templates) != maxTemplates {
			t.Fatalf("%d templates", len(dm.templates))
		}
	}
	if drops["limits"] != 5 {
		t.Fatalf("drops %v, want 5 limits", drops)
	}
}
