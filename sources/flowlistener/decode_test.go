package flowlistener

import (
	"fmt"
	"net/netip"
	"slices"
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

// oddIf is fg.Odd (an enterprise and a variable-length field) with the
// ingress interface after them: its offset varies from record to record.
var oddIf = append(slices.Clone(fg.Odd), fg.Field{Type: 10, Len: 4})

// inIf is r arriving on input interface n.
func inIf(r fg.Rec, n uint32) fg.Rec { r.InIf = n; return r }

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
			name:  "v5 record from 0.0.0.0",
			steps: []step{{0, fg.V5(100, 0, []fg.Rec{rec(netip.IPv4Unspecified(), wan, 68, 67, 328, 1), r1})}},
			flows: []string{"192.0.2.10:50000>198.51.100.7:443/6 1500B 10p"},
			drops: map[string]uint64{"no_address": 1},
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
			name: "v9 sampling per input interface (options scoped to an interface)",
			steps: []step{{0, fg.NewV9(1, 7).
				OptionsTemplate(259, []fg.Field{{Type: 2, Len: 4}}, samp).
				OptionsData(259, []fg.Field{{Type: 2, Len: 4}}, samp, [][]uint64{{1, 10, 2}, {2, 100, 2}}).
				Template(256, fg.V4).Data(256, fg.V4, []fg.Rec{inIf(r1, 1), inIf(r2, 2), inIf(r1, 3)}, 0).Bytes()}},
			flows: []string{"192.0.2.10:50000>198.51.100.7:443/6 15000B 100p", "198.51.100.7:443>192.0.2.10:50000/6 9000000B 6000p",
				"192.0.2.10:50000>198.51.100.7:443/6 1500B 10p"},
		},
		{
			name: "IPFIX sampling per ingress interface beside a domain-wide one",
			steps: []step{{0, fg.NewIPFIX(0, 1).
				OptionsTemplate(400, ipfixScope, ipfixSamp).OptionsData(400, ipfixScope, ipfixSamp, [][]uint64{{1, 1, 3}}).
				OptionsTemplate(401, []fg.Field{{Type: 10, Len: 4}}, ipfixSamp).OptionsData(401, []fg.Field{{Type: 10, Len: 4}}, ipfixSamp, [][]uint64{{5, 1, 9}}).
				Template(256, fg.V4).Data(256, fg.V4, []fg.Rec{inIf(r1, 5), inIf(r1, 6)}, 0).Bytes()}},
			flows: []string{"192.0.2.10:50000>198.51.100.7:443/6 15000B 100p", "192.0.2.10:50000>198.51.100.7:443/6 6000B 40p"},
		},
		{
			name: "IPFIX sampling per ingress interface, data template with a variable-length field",
			steps: []step{{0, fg.NewIPFIX(0, 1).
				OptionsTemplate(401, []fg.Field{{Type: 10, Len: 4}}, ipfixSamp).OptionsData(401, []fg.Field{{Type: 10, Len: 4}}, ipfixSamp, [][]uint64{{5, 1, 9}}).
				Template(257, oddIf).Data(257, oddIf, []fg.Rec{inIf(r1, 5), inIf(r1, 6)}, 0).Bytes()}},
			flows: []string{"192.0.2.10:50000>198.51.100.7:443/6 15000B 100p", "192.0.2.10:50000>198.51.100.7:443/6 1500B 10p"},
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

// A hostile exporter sends templates of the largest size a datagram
// allows (16,000 fields) and many of the largest accepted size over
// several domains: what is stored stays within 256 fields a template and
// 65,536 fields an exporter, and every refusal is counted (limits).
func TestTemplateBudget(t *testing.T) {
	const (
		domains     = 8
		huge        = 16_000 // one per message: 64 KB of specifiers
		hugePer     = 3      // per domain
		full        = 256
		fullPer     = 40 // per domain, 10 per message
		maxFields   = 256
		budget      = 1 << 16
		wantRefused = domains*hugePer + domains*fullPer - budget/(full+4)
	)
	spec := func(n int) []fg.Field {
		f := append([]fg.Field(nil), fg.V4...)
		for len(f) < n {
			f = append(f, fg.Field{Type: 82, Len: 4})
		}
		return f
	}
	var steps []step
	sent := 0
	for dm := uint32(0); dm < domains; dm++ {
		for i := 0; i < hugePer; i++ {
			steps = append(steps, step{0, fg.NewIPFIX(0, dm).Template(uint16(256+i), spec(huge)).Bytes()})
			sent++
		}
		for i := 0; i < fullPer; i += 10 {
			m := fg.NewIPFIX(0, dm)
			for j := i; j < i+10; j++ {
				m.Template(uint16(1000+j), spec(full))
				sent++
			}
			steps = append(steps, step{0, m.Bytes()})
		}
	}
	_, drops, _, ex := run(t, 0, steps...)
	stored, fields := 0, 0
	for _, dm := range ex.domains {
		for id, tp := range dm.templates {
			stored++
			fields += len(tp.fields)
			if len(tp.fields) > maxFields {
				t.Errorf("template %d of %d fields stored", id, len(tp.fields))
			}
		}
	}
	if fields > budget {
		t.Errorf("%d template fields stored, over the exporter's budget of %d", fields, budget)
	}
	if stored+int(drops["limits"]) != sent || drops["limits"] != wantRefused {
		t.Errorf("%d of %d templates stored, %d refused (limits); want %d refused", stored, sent, drops["limits"], wantRefused)
	}
	if ex.fields != fields+stored*templateOverhead {
		t.Errorf("exporter's template cost %d, want %d", ex.fields, fields+stored*templateOverhead)
	}

	// Withdrawing templates gives their cost back: new ones fit again.
	d := &decoder{sink: func(*flow) {}}
	ex = &exporter{addr: netip.MustParseAddr("192.0.2.1"), domains: map[uint64]*domain{}}
	for _, s := range steps {
		d.datagram(ex, s.b, t0)
	}
	for dm := uint32(0); dm < domains; dm++ {
		d.datagram(ex, fg.NewIPFIX(0, dm).Withdraw(2).Bytes(), t0)
	}
	if ex.fields != 0 {
		t.Fatalf("cost %d after every template was withdrawn", ex.fields)
	}
	refused := d.drops[dropLimits]
	d.datagram(ex, fg.NewIPFIX(0, 0).Template(256, spec(full)).Bytes(), t0)
	if d.drops[dropLimits] != refused || len(ex.domains[domainKey(10, 0)].templates) != 1 {
		t.Fatal("a template was refused after the others were withdrawn")
	}
}

// A template refresh that repeats the stored template allocates nothing.
func TestTemplateRefreshAllocs(t *testing.T) {
	d := &decoder{sink: func(*flow) {}}
	ex := &exporter{addr: netip.MustParseAddr("192.0.2.1"), domains: map[uint64]*domain{}}
	v9 := fg.NewV9(1, 7).Template(256, fg.V4).Bytes()
	ipfix := fg.NewIPFIX(0, 1).Template(300, fg.Odd).Bytes()
	d.datagram(ex, v9, t0)
	d.datagram(ex, ipfix, t0)
	if n := testing.AllocsPerRun(100, func() {
		d.datagram(ex, v9, t0)
		d.datagram(ex, ipfix, t0)
	}); n != 0 {
		t.Errorf("%v allocations per refresh", n)
	}
}

// Sequence accounting: loss, late (reordered) datagrams, restarts and
// wraparound, per version.
func TestSequence(t *testing.T) {
	r1 := rec(lan, wan, 50000, 443, 1500, 10)
	two := []fg.Rec{r1, r1}
	three := []fg.Rec{r1, r1, r1}
	v5 := func(seq uint32) step { return step{0, fg.V5(seq, 0, two)} }
	v5e := func(seq uint32, engine byte) step {
		b := fg.V5(seq, 0, two)
		b[21] = engine
		return step{0, b}
	}
	ipfix := func(seq uint32) step { return step{0, fg.NewIPFIX(seq, 1).Data(300, fg.V4, two, 0).Bytes()} }
	v9 := func(seq uint32) step { return step{0, fg.NewV9(seq, 7).Data(256, fg.V4, two, 0).Bytes()} }
	tests := []struct {
		name     string
		steps    []step
		lost     uint64
		restarts uint64
	}{
		{"v5 in order", []step{v5(0), v5(2), v5(4)}, 0, 0},
		{"v5 gap", []step{v5(0), v5(4), v5(6)}, 2, 0},
		{"v5 reordered: 0 4 2 6", []step{v5(0), v5(4), v5(2), v5(6)}, 0, 0},
		{"v5 reordered twice, one lost", []step{v5(0), v5(6), v5(4), v5(8), v5(10)}, 2, 0},
		{"v5 duplicate takes back no more than was counted", []step{v5(0), v5(2), v5(2), v5(4)}, 0, 0},
		{"v5 late datagram takes back only its domain's loss", []step{v5e(0, 1), v5e(4, 1), v5e(0, 2), v5e(2, 2), v5e(0, 2)}, 2, 0},
		{"v5 restart", []step{v5(10_000_000), v5(10_000_002), v5(0), v5(2)}, 0, 1},
		{"v5 forward jump past 2^24 is a restart", []step{v5(0), v5(1 << 25)}, 0, 1},
		{"v5 wraparound", []step{v5(0xFFFFFFFC), v5(0xFFFFFFFE), v5(0), v5(2)}, 0, 0},
		{"v5 wraparound with loss", []step{v5(0xFFFFFFFC), v5(0), v5(2)}, 2, 0},
		{"v5 reordered across the wrap", []step{v5(0xFFFFFFFC), v5(0), v5(0xFFFFFFFE), v5(2)}, 0, 0},
		{"IPFIX reordered", []step{
			{0, fg.NewIPFIX(0, 1).Template(300, fg.V4).Data(300, fg.V4, two, 0).Bytes()}, ipfix(4), ipfix(2), ipfix(6),
		}, 0, 0},
		{"v9 reordered", []step{
			{0, fg.NewV9(1, 7).Template(256, fg.V4).Data(256, fg.V4, two, 0).Bytes()}, v9(3), v9(2), v9(4),
		}, 0, 0},
		{"v9 restart", []step{
			{0, fg.NewV9(5000, 7).Template(256, fg.V4).Data(256, fg.V4, two, 0).Bytes()}, v9(5001), v9(1), v9(2),
		}, 0, 1},
		// Data before its template: the held records belong to the first
		// message, not to the one whose template decodes them.
		{"IPFIX data before template, then loss", []step{
			{0, fg.NewIPFIX(0, 1).Data(300, fg.V4, three, 0).Bytes()},
			{time.Second, fg.NewIPFIX(3, 1).Template(300, fg.V4).Data(300, fg.V4, []fg.Rec{r1}, 0).Bytes()},
			{2 * time.Second, fg.NewIPFIX(9, 1).Data(300, fg.V4, []fg.Rec{r1}, 0).Bytes()},
		}, 5, 0},
		{"IPFIX data before template, no loss", []step{
			{0, fg.NewIPFIX(0, 1).Data(300, fg.V4, three, 0).Bytes()},
			{time.Second, fg.NewIPFIX(3, 1).Template(300, fg.V4).Data(300, fg.V4, []fg.Rec{r1}, 0).Bytes()},
			{2 * time.Second, fg.NewIPFIX(4, 1).Data(300, fg.V4, []fg.Rec{r1}, 0).Bytes()},
		}, 0, 0},
		{"v9 data before template: flows per packet from own records", []step{
			{0, fg.NewV9(1, 7).Data(256, fg.V4, three, 0).Bytes()},
			{time.Second, fg.NewV9(2, 7).Template(256, fg.V4).Data(256, fg.V4, []fg.Rec{r1}, 0).Bytes()},
			{2 * time.Second, fg.NewV9(3, 7).Data(256, fg.V4, []fg.Rec{r1}, 0).Bytes()},
			{3 * time.Second, fg.NewV9(5, 7).Data(256, fg.V4, []fg.Rec{r1}, 0).Bytes()},
		}, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, drops, lost, ex := run(t, 0, tc.steps...)
			if lost != tc.lost || ex.lost != tc.lost || ex.restarts != tc.restarts {
				t.Errorf("lost %d (exporter %d), %d restarts; want lost %d, %d restarts", lost, ex.lost, ex.restarts, tc.lost, tc.restarts)
			}
			if len(drops) != 0 {
				t.Errorf("drops %v", drops)
			}
		})
	}
}

// A template with both IPv4 and IPv6 address fields: each record takes
// the family whose addresses are set, whatever the fields' order.
func TestMixedFamilies(t *testing.T) {
	mixed := []fg.Field{{Type: 27, Len: 16}, {Type: 8, Len: 4}, {Type: 28, Len: 16}, {Type: 12, Len: 4}, {Type: 7, Len: 2}, {Type: 11, Len: 2}, {Type: 4, Len: 1}, {Type: 1, Len: 4}, {Type: 2, Len: 4}}
	v4only := []fg.Field{{Type: 8, Len: 4}, {Type: 12, Len: 4}, {Type: 7, Len: 2}, {Type: 11, Len: 2}, {Type: 4, Len: 1}, {Type: 1, Len: 4}, {Type: 2, Len: 4}}
	// record encodes r with the other family's addresses zero.
	record := func(fields []fg.Field, r fg.Rec) []byte {
		var b []byte
		for _, f := range fields {
			rr := r
			switch {
			case (f.Type == 8 || f.Type == 12) && !r.Src.Is4():
				rr.Src, rr.Dst = netip.IPv4Unspecified(), netip.IPv4Unspecified()
			case (f.Type == 27 || f.Type == 28) && r.Src.Is4():
				rr.Src, rr.Dst = netip.IPv6Unspecified(), netip.IPv6Unspecified()
			}
			b = fg.AppendRecord(b, []fg.Field{f}, rr)
		}
		return b
	}
	r4 := rec(lan, wan, 50000, 443, 1500, 10)
	r6 := rec(lan6, wan6, 40000, 53, 700, 7)
	zero := rec(netip.IPv4Unspecified(), netip.IPv4Unspecified(), 1, 2, 3, 4)
	from0 := rec(netip.IPv4Unspecified(), netip.MustParseAddr("255.255.255.255"), 68, 67, 328, 1)
	var data []byte
	for _, r := range []fg.Rec{r4, r6, zero} {
		data = append(data, record(mixed, r)...)
	}
	tests := []struct {
		name  string
		b     []byte
		flows []string
		drops map[string]uint64
	}{
		{
			name: "IPFIX mixed template, v6 fields last",
			b:    fg.NewIPFIX(0, 1).Template(300, mixed).Raw(300, data).Bytes(),
			flows: []string{
				"192.0.2.10:50000>198.51.100.7:443/6 1500B 10p",
				"2001:db8::10:40000>2001:db8:ffff::7:53/6 700B 7p",
			},
			drops: map[string]uint64{"no_address": 1},
		},
		{
			name: "v9 mixed template",
			b:    fg.NewV9(1, 7).Template(256, mixed).Raw(256, data).Bytes(),
			flows: []string{
				"192.0.2.10:50000>198.51.100.7:443/6 1500B 10p",
				"2001:db8::10:40000>2001:db8:ffff::7:53/6 700B 7p",
			},
			drops: map[string]uint64{"no_address": 1},
		},
		{
			name:  "IPv4 template, unspecified source",
			b:     fg.NewIPFIX(0, 1).Template(300, v4only).Raw(300, record(v4only, from0)).Bytes(),
			drops: map[string]uint64{"no_address": 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			flows, drops, _, _ := run(t, 0, step{0, tc.b})
			if strings.Join(flows, "\n") != strings.Join(tc.flows, "\n") {
				t.Errorf("flows:\n%s\nwant:\n%s", strings.Join(flows, "\n"), strings.Join(tc.flows, "\n"))
			}
			if fmt.Sprint(drops) != fmt.Sprint(tc.drops) {
				t.Errorf("drops %v, want %v", drops, tc.drops)
			}
		})
	}
}

// Held data sets wait at most a minute for their template: older ones are
// dropped and counted as no_template, never decoded late.
func TestPendingExpires(t *testing.T) {
	r1 := rec(lan, wan, 50000, 443, 1500, 10)
	data := func(seq uint32) []byte { return fg.NewV9(seq, 7).Data(256, fg.V4, []fg.Rec{r1}, 0).Bytes() }
	tpl := fg.NewV9(9, 7).Template(256, fg.V4).Bytes()
	tests := []struct {
		name  string
		steps []step
		flows int
		drops map[string]uint64
	}{
		{"template within a minute", []step{{0, data(1)}, {59 * time.Second, tpl}}, 1, map[string]uint64{}},
		{"template after a minute", []step{{0, data(1)}, {61 * time.Second, tpl}}, 0, map[string]uint64{"no_template": 1}},
		{"only the old ones expire", []step{{0, data(1)}, {30 * time.Second, data(2)}, {61 * time.Second, tpl}}, 1, map[string]uint64{"no_template": 1}},
		{"expired by the next datagram of the domain", []step{{0, data(1)}, {2 * time.Minute, fg.NewV9(2, 7).Bytes()}}, 0, map[string]uint64{"no_template": 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			flows, drops, _, ex := run(t, 0, tc.steps...)
			if len(flows) != tc.flows || fmt.Sprint(drops) != fmt.Sprint(tc.drops) {
				t.Errorf("%d flows, drops %v; want %d flows, drops %v", len(flows), drops, tc.flows, tc.drops)
			}
			for _, dm := range ex.domains {
				if len(dm.pending) != 0 || dm.pendingBytes != 0 {
					t.Errorf("%d sets (%d bytes) still held", len(dm.pending), dm.pendingBytes)
				}
			}
		})
	}
}
