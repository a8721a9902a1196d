package traffic_test

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/inventory/inventorytest"
	"github.com/jocasta/jocasta/projections/traffic"
)

var at = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

type fixture struct {
	t   *testing.T
	db  *bolt.DB
	p   *traffic.Projection
	inv *inventorytest.Harness
	seq uint64
}

func newFixture(t *testing.T) *fixture {
	inv := inventorytest.New(t, inventory.Options{})
	countries, err := traffic.LoadCountries("")
	if errors.Is(err, traffic.ErrNoCountryData) {
		if testingCI() {
			t.Fatal("CI: the country database is not embedded (make country)")
		}
		t.Log("no embedded country database: countries are not checked")
	} else if err != nil {
		t.Fatal(err)
	}
	// A DNS answer named 1.1.1.1 (the DNS projection's PeerName in serve).
	named := func(_ string, peer netip.Addr, _ time.Time) string {
		if peer == netip.MustParseAddr("1.1.1.1") {
			return "one.one.one.one"
		}
		return ""
	}
	p, err := traffic.New(traffic.Options{Addresses: inv.Inv, Countries: countries, Home: "DE", PeerName: named})
	if err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(t.TempDir(), "t.db"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	f := &fixture{t: t, db: db, p: p, inv: inv}
	f.load()
	return f
}

func (f *fixture) load() {
	err := f.db.Update(func(tx *bolt.Tx) error {
		for _, b := range f.p.Buckets() {
			if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
				return err
			}
		}
		return f.p.Load(tx)
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) apply(kind string, payload any, t time.Time, source string) {
	f.t.Helper()
	e := events.MustNew(kind, payload, t)
	f.seq++
	e.Seq, e.Source = f.seq, source
	if err := f.db.Update(func(tx *bolt.Tx) error { return f.p.Apply(tx, e) }); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) window(end time.Time, first, final bool, rows ...events.TrafficRow) {
	f.apply(events.KindTrafficRecorded, events.TrafficRecorded{
		ScanID: "w", Started: end.Add(-time.Minute), Finished: end, Complete: true, First: first, Final: final, Rows: rows,
	}, end, "flowlistener:gw")
}

func TestTraffic(t *testing.T) {
	f := newFixture(t)
	f.inv.Sweep(at, true, inventorytest.Host("10.0.0.5", "00:11:22:00:00:01"), inventorytest.Host("10.0.0.6", "00:11:22:00:00:02"))
	nas, tv := f.inv.Device("10.0.0.5").ID, f.inv.Device("10.0.0.6").ID
	// Traffic before the sweep found the device is still its own.
	f.window(at.Add(-30*time.Minute), true, false,
		events.TrafficRow{Src: "10.0.0.5", Dst: "1.1.1.1", Proto: 17, Port: 53, Bytes: 100, Packets: 2, Flows: 1},
		events.TrafficRow{Src: "1.1.1.1", Dst: "10.0.0.5", Proto: 17, Port: 53, Bytes: 300, Packets: 2, Flows: 1},
	)
	f.window(at.Add(30*time.Minute), false, false,
		events.TrafficRow{Src: "10.0.0.5", Dst: "1.1.1.1", Proto: 17, Port: 53, Bytes: 1000, Packets: 20, Flows: 10},
		events.TrafficRow{Src: "10.0.0.5", Dst: "10.0.0.6", Proto: 6, Port: 445, Bytes: 5000, Packets: 50, Flows: 1},
		events.TrafficRow{Src: "2001:db8::9", Dst: "9.9.9.9", Proto: 6, Port: 443, Bytes: 7, Packets: 1, Flows: 1}, // nobody's
	)
	ctx := context.Background()
	page, err := f.p.DeviceTraffic(ctx, nas, traffic.Filter{Since: at.Add(-time.Hour), Until: at.Add(time.Hour), By: traffic.ByPeer})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 2 || page.Items[0].Peer != "10.0.0.6" || page.Items[0].BytesOut != 5000 || page.Items[0].Country != "" {
		t.Fatalf("by peer: %+v", page.Items)
	}
	dns := page.Items[1]
	if dns.Peer != "1.1.1.1" || dns.Name != "one.one.one.one" || page.Items[0].Name != "" || dns.BytesOut != 1100 || dns.BytesIn != 300 || dns.FlowsOut != 11 || dns.PacketsIn != 2 {
		t.Fatalf("1.1.1.1: %+v", dns)
	}
	page, err = f.p.DeviceTraffic(ctx, tv, traffic.Filter{Since: at.Add(-time.Hour), Until: at.Add(time.Hour)})
	if err != nil || len(page.Items) != 1 || page.Items[0].BytesIn != 5000 || page.Items[0].BytesOut != 0 {
		t.Fatalf("the peer device sees it in: %+v %v", page.Items, err)
	}
	page, err = f.p.DeviceTraffic(ctx, nas, traffic.Filter{Since: at.Add(-time.Hour), Until: at.Add(time.Hour), By: traffic.ByHour, Limit: 1})
	if err != nil || len(page.Items) != 1 || page.Items[0].Hour == nil || !page.Items[0].Hour.Equal(at.Add(-time.Hour)) || page.NextCursor == nil {
		t.Fatalf("by hour, page 1: %+v %v", page, err)
	}
	page, err = f.p.DeviceTraffic(ctx, nas, traffic.Filter{Since: at.Add(-time.Hour), Until: at.Add(time.Hour), By: traffic.ByHour, Limit: 1, Cursor: *page.NextCursor})
	if err != nil || len(page.Items) != 1 || !page.Items[0].Hour.Equal(at) || page.NextCursor != nil || page.Items[0].BytesOut != 6000 {
		t.Fatalf("by hour, page 2: %+v %v", page, err)
	}
	page, err = f.p.DeviceTraffic(ctx, nas, traffic.Filter{Since: at, Until: at.Add(time.Hour), By: traffic.ByCountry})
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, it := range page.Items {
		total += it.BytesOut
	}
	if total != 6000 {
		t.Fatalf("by country: %+v", page.Items)
	}
	if _, err := f.p.DeviceTraffic(ctx, "dnope", traffic.Filter{Since: at, Until: at.Add(time.Hour)}); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("unknown device: %v", err)
	}
	if _, err := f.p.DeviceTraffic(ctx, nas, traffic.Filter{By: "port"}); !errors.Is(err, traffic.ErrBadBy) {
		t.Fatalf("bad by: %v", err)
	}
	if _, err := f.p.DeviceTraffic(ctx, nas, traffic.Filter{Cursor: "zz"}); !errors.Is(err, projections.ErrBadCursor) {
		t.Fatalf("bad cursor: %v", err)
	}

	ov, err := f.p.Overview(ctx, at.Add(-time.Hour), at.Add(time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	if ov.Home != "DE" || len(ov.Devices) != 2 || ov.Devices[0].DeviceID != nas || ov.Total.BytesOut != 6100+0 || ov.Total.BytesIn != 5300 {
		t.Fatalf("overview: %+v", ov)
	}
	for _, p := range ov.Peers {
		if p.Peer == "9.9.9.9" || p.Peer == "2001:db8::9" {
			t.Fatalf("a row of no device was counted: %+v", p)
		}
	}

	// Reload: nothing lives only in memory; then a crash gap is found.
	f.load()
	f.window(at.Add(2*time.Hour), true, false)
	if g := f.p.Gaps(); len(g) != 1 || !g[0].Last.Equal(at.Add(30*time.Minute)) {
		t.Fatalf("gaps %+v", g)
	}
	if u := f.p.Unclosed(); len(u) != 1 {
		t.Fatalf("a window that was not the last one is not reported as unclosed: %+v", u)
	}
	f.window(at.Add(3*time.Hour), false, true) // clean stop
	if u := f.p.Unclosed(); len(u) != 0 {
		t.Fatalf("a clean stop reported as unclosed: %+v", u)
	}
	f.window(at.Add(4*time.Hour), true, false)
	if g := f.p.Gaps(); len(g) != 1 {
		t.Fatalf("a clean stop was taken for a crash: %+v", g)
	}

	// Retention drops the hours before its cutoff; the purger asks first
	// whether there are any.
	cut := at
	if n, err := f.p.RowsBefore(ctx, cut); err != nil || n == 0 {
		t.Fatalf("rows before the cutoff: %d %v", n, err)
	}
	f.apply(events.KindRetentionPurged, events.RetentionPurged{TrafficBefore: &cut, Counts: map[string]int{}}, at.Add(5*time.Hour), "retention")
	page, err = f.p.DeviceTraffic(ctx, nas, traffic.Filter{Since: at.Add(-time.Hour), Until: at.Add(time.Hour), By: traffic.ByHour})
	if err != nil || len(page.Items) != 1 || !page.Items[0].Hour.Equal(at) {
		t.Fatalf("after retention: %+v %v", page.Items, err)
	}
	if n, _ := f.p.RowsBefore(ctx, cut); n != 0 {
		t.Fatalf("%d rows before the cutoff after the purge", n)
	}
}

// embeddedCountries is the embedded country database; the test is
// skipped without it, outside CI.
func embeddedCountries(t *testing.T) *traffic.Countries {
	t.Helper()
	c, err := traffic.LoadCountries("")
	if errors.Is(err, traffic.ErrNoCountryData) {
		if testingCI() {
			t.Fatal("CI: the country database is not embedded (make country)")
		}
		t.Skip("no embedded country database (make country)")
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestEmbeddedCountriesTakeNoHeap: the embedded database is read where
// the binary holds it, not copied or unpacked into the heap (5 MB for
// the life of the process, twice that with the collector's headroom).
func TestEmbeddedCountriesTakeNoHeap(t *testing.T) {
	embeddedCountries(t) // skips (or fails in CI) without it
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c, err := traffic.LoadCountries("")
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("loading the embedded database allocated %d bytes, want it read in place (under 1 MiB)", got)
	}
	if got := c.Country(netip.MustParseAddr("1.1.1.1")); got == "" {
		t.Error("1.1.1.1 has no country in the embedded database")
	}
}

func TestCountries(t *testing.T) {
	c := embeddedCountries(t)
	for _, tc := range []struct{ ip, want string }{
		{"8.8.8.8", "US"}, {"10.0.0.1", ""}, {"100.64.0.1", ""}, {"fd00::1", ""}, {"::ffff:8.8.8.8", "US"},
	} {
		if got := c.Country(netip.MustParseAddr(tc.ip)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.ip, got, tc.want)
		}
	}
	if _, err := traffic.LoadCountries(filepath.Join(t.TempDir(), "missing.mmdb")); err == nil {
		t.Fatal("a missing file was accepted")
	}
	// An operator's .mmdb (location.country_db) replaces the embedded one:
	// here the embedded one as a file.
	raw, err := os.ReadFile(filepath.Join("data", "country.mmdb"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "country.mmdb")
	os.WriteFile(file, raw, 0o600)
	own, err := traffic.LoadCountries(file)
	if err != nil || own.Country(netip.MustParseAddr("8.8.8.8")) != "US" {
		t.Fatalf("a country database from a file: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.mmdb")
	os.WriteFile(bad, []byte("not a database"), 0o600)
	if _, err := traffic.LoadCountries(bad); err == nil {
		t.Fatal("garbage accepted as a country database")
	}
}

// peerAddr is the i-th public peer address (a few countries' ranges).
func peerAddr(i int) string {
	bases := []string{"8.8.", "1.1.", "9.9.", "80.1."}
	return bases[i%len(bases)] + strconv.Itoa(i/len(bases)/250) + "." + strconv.Itoa(i/len(bases)%250+1)
}

// TestFold: past TopPeers peers of an address in an hour, rows are
// folded by (country, direction); every total of the device hour stays
// exact, kept peers stay exact, and folded ones never count as peers.
func TestFold(t *testing.T) {
	type win struct {
		peers  []int // peer indices, each sends and receives
		bytes  func(peer int) uint64
		offset time.Duration // window end after the hour's start
		sorted bool          // rows in the listener's order (by source, then destination)
	}
	flat := func(uint64) func(int) uint64 { return func(int) uint64 { return 10 } }
	tests := []struct {
		name       string
		wins       []win
		wantKept   int   // distinct peers with their own rows
		wantPeers  []int // some peers that must be kept, exact
		wantFolded []int // some peers that must be folded
	}{
		{"under the limit", []win{{peers: seq(0, 50), bytes: flat(10), offset: time.Minute}}, 50, []int{0, 49}, nil},
		{"exactly the limit", []win{{peers: seq(0, traffic.TopPeers), bytes: flat(10), offset: time.Minute}}, traffic.TopPeers, []int{0, traffic.TopPeers - 1}, nil},
		{"one window past it: the busiest kept", []win{{peers: seq(0, 300), bytes: func(p int) uint64 { return uint64(1000 + p) }, offset: time.Minute}},
			traffic.TopPeers, []int{299, 200}, []int{0, 199}},
		{"one window past it, the listener's order", []win{{peers: seq(0, 300), bytes: func(p int) uint64 { return uint64(1000 + p) }, offset: time.Minute, sorted: true}},
			traffic.TopPeers, []int{299, 200}, []int{0, 199}},
		{"first come across windows, then exact", []win{
			{peers: seq(0, 80), bytes: flat(10), offset: time.Minute},
			{peers: seq(80, 200), bytes: func(p int) uint64 { return uint64(p) }, offset: 2 * time.Minute}, // 20 slots left: 180..199 by bytes
			{peers: append(seq(0, 5), seq(100, 105)...), bytes: flat(10), offset: 3 * time.Minute},         // kept ones grow, folded ones stay folded
		}, traffic.TopPeers, []int{0, 4, 79, 180, 199}, []int{80, 100, 104, 179}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.inv.Sweep(at, true, inventorytest.Host("10.0.0.5", "00:11:22:00:00:01"))
			dev := f.inv.Device("10.0.0.5").ID
			wantOut, wantIn := map[int]uint64{}, map[int]uint64{}
			var totalOut, totalIn, flows uint64
			for wi, w := range tc.wins {
				var rows []events.TrafficRow
				for _, p := range w.peers {
					b := w.bytes(p)
					rows = append(rows,
						events.TrafficRow{Src: "10.0.0.5", Dst: peerAddr(p), Proto: 6, Port: 443, Bytes: b, Packets: 1, Flows: 1},
						events.TrafficRow{Src: peerAddr(p), Dst: "10.0.0.5", Proto: 6, Port: 443, Bytes: 2 * b, Packets: 2, Flows: 1},
					)
					wantOut[p] += b
					wantIn[p] += 2 * b
					totalOut += b
					totalIn += 2 * b
					flows++
				}
				if w.sorted {
					slices.SortFunc(rows, func(a, b events.TrafficRow) int {
						if c := netip.MustParseAddr(a.Src).Compare(netip.MustParseAddr(b.Src)); c != 0 {
							return c
						}
						return netip.MustParseAddr(a.Dst).Compare(netip.MustParseAddr(b.Dst))
					})
				}
				f.window(at.Add(w.offset), wi == 0, false, rows...)
			}
			ctx := context.Background()
			all, err := f.p.DeviceTraffic(ctx, dev, traffic.Filter{Since: at, Until: at.Add(time.Hour), By: traffic.ByPeer, Limit: traffic.MaxLimit})
			if err != nil {
				t.Fatal(err)
			}
			var sum traffic.Totals
			kept := map[string]traffic.Item{}
			for _, it := range all.Items {
				sum.BytesOut += it.BytesOut
				sum.BytesIn += it.BytesIn
				sum.FlowsOut += it.FlowsOut
				if strings.HasPrefix(it.Key, traffic.OtherPrefix) {
					if it.Peer != "" || it.Key != traffic.OtherPrefix+it.Country {
						t.Errorf("folded item %+v", it)
					}
					continue
				}
				kept[it.Peer] = it
			}
			if sum.BytesOut != totalOut || sum.BytesIn != totalIn || sum.FlowsOut != flows {
				t.Errorf("by peer sums to out %d in %d flows %d, sent %d %d %d", sum.BytesOut, sum.BytesIn, sum.FlowsOut, totalOut, totalIn, flows)
			}
			if len(kept) != tc.wantKept {
				t.Errorf("%d peers kept, want %d", len(kept), tc.wantKept)
			}
			for _, p := range tc.wantPeers {
				it, ok := kept[peerAddr(p)]
				if !ok || it.BytesOut != wantOut[p] || it.BytesIn != wantIn[p] {
					t.Errorf("peer %d (%s): %+v (kept %v), want out %d in %d", p, peerAddr(p), it, ok, wantOut[p], wantIn[p])
				}
			}
			for _, p := range tc.wantFolded {
				if _, ok := kept[peerAddr(p)]; ok {
					t.Errorf("peer %d (%s) kept, want folded", p, peerAddr(p))
				}
			}
			// The hour and the country views total the same.
			for _, by := range []string{traffic.ByHour, traffic.ByCountry} {
				page, err := f.p.DeviceTraffic(ctx, dev, traffic.Filter{Since: at, Until: at.Add(time.Hour), By: by, Limit: traffic.MaxLimit})
				if err != nil {
					t.Fatal(err)
				}
				var out, in uint64
				for _, it := range page.Items {
					out, in = out+it.BytesOut, in+it.BytesIn
				}
				if out != totalOut || in != totalIn {
					t.Errorf("by %s: out %d in %d, want %d %d", by, out, in, totalOut, totalIn)
				}
			}
			ov, err := f.p.Overview(ctx, at, at.Add(time.Hour), traffic.MaxLimit)
			if err != nil {
				t.Fatal(err)
			}
			if len(ov.Devices) != 1 || ov.Devices[0].BytesOut != totalOut || ov.Devices[0].BytesIn != totalIn || ov.Total.FlowsOut != flows {
				t.Errorf("overview devices %+v total %+v", ov.Devices, ov.Total)
			}
			var cOut uint64
			for _, c := range ov.Countries {
				cOut += c.BytesOut
			}
			if cOut != totalOut {
				t.Errorf("overview countries sum to %d, want %d", cOut, totalOut)
			}
			if len(ov.Peers) != tc.wantKept {
				t.Errorf("overview: %d peers, want the %d kept (folded ones are no peer)", len(ov.Peers), tc.wantKept)
			}
		})
	}
}

func seq(lo, hi int) []int {
	out := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

// TestFoldHours: the limit is per hour; each hour starts afresh.
func TestFoldHours(t *testing.T) {
	f := newFixture(t)
	f.inv.Sweep(at, true, inventorytest.Host("10.0.0.5", "00:11:22:00:00:01"))
	dev := f.inv.Device("10.0.0.5").ID
	rows := func(lo, hi int) []events.TrafficRow {
		var out []events.TrafficRow
		for p := lo; p < hi; p++ {
			out = append(out, events.TrafficRow{Src: "10.0.0.5", Dst: peerAddr(p), Proto: 6, Port: 443, Bytes: 5, Packets: 1, Flows: 1})
		}
		return out
	}
	f.window(at.Add(time.Minute), true, false, rows(0, traffic.TopPeers+10)...)
	f.window(at.Add(time.Hour+time.Minute), false, false, rows(traffic.TopPeers, traffic.TopPeers+10)...)
	page, err := f.p.DeviceTraffic(context.Background(), dev, traffic.Filter{Since: at.Add(time.Hour), Until: at.Add(2 * time.Hour), Limit: traffic.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 10 || strings.HasPrefix(page.Items[0].Key, traffic.OtherPrefix) {
		t.Fatalf("the next hour: %+v", page.Items)
	}
}

// location.country, else the country of the router's outside address.
func TestHomeFromOutsideAddress(t *testing.T) {
	countries := embeddedCountries(t)
	inv := inventorytest.New(t, inventory.Options{})
	for _, c := range []struct {
		name, home, outside string
		want, wantFrom      string
	}{
		{"configured", "DE", "8.8.8.8", "DE", "location.country"},
		{"derived", "", "8.8.8.8", "US", "outside address 8.8.8.8 (read by routerapi:core)"},
		{"carrier-grade NAT", "", "100.64.12.1", "", ""},
		{"private", "", "192.168.1.2", "", ""},
		{"none read", "", "", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			outside := func() (netip.Addr, string) {
				if c.outside == "" {
					return netip.Addr{}, ""
				}
				return netip.MustParseAddr(c.outside), "routerapi:core"
			}
			p, err := traffic.New(traffic.Options{Addresses: inv.Inv, Countries: countries, Home: c.home, Outside: outside})
			if err != nil {
				t.Fatal(err)
			}
			if got, from := p.Home(); got != c.want || from != c.wantFrom {
				t.Errorf("home %q from %q, want %q from %q", got, from, c.want, c.wantFrom)
			}
		})
	}
}

// A window that ends on the hour (the listener ends each hour's last
// window there) counts in the hour before; one that ends a nanosecond
// later counts in the new hour.
func TestWindowOnTheHour(t *testing.T) {
	f := newFixture(t)
	f.inv.Sweep(at.Add(-2*time.Hour), true, inventorytest.Host("10.0.0.5", "00:11:22:00:00:01"))
	nas := f.inv.Device("10.0.0.5").ID
	row := events.TrafficRow{Src: "10.0.0.5", Dst: "1.1.1.1", Proto: 17, Port: 53, Bytes: 100, Packets: 1, Flows: 1}
	f.window(at, true, false, row)                       // [at-1m, at): the hour before
	f.window(at.Add(time.Nanosecond), false, false, row) // ends in the hour of at
	page, err := f.p.DeviceTraffic(context.Background(), nas, traffic.Filter{Since: at.Add(-2 * time.Hour), Until: at.Add(time.Hour), By: traffic.ByHour})
	if err != nil {
		t.Fatal(err)
	}
	got := map[time.Time]uint64{}
	for _, it := range page.Items {
		got[*it.Hour] = it.BytesOut
	}
	if len(got) != 2 || got[at.Add(-time.Hour)] != 100 || got[at] != 100 {
		t.Fatalf("bytes by hour %v, want 100 in the hour before %s and 100 in its own", got, at)
	}
}

// A device merged into another: the group's traffic is the one device's
// (the API shows the group as it), whichever member held the address.
func TestMergedDeviceTraffic(t *testing.T) {
	f := newFixture(t)
	f.inv.Sweep(at.Add(-2*time.Hour), true, inventorytest.Host("10.0.0.5", "00:11:22:00:00:01"), inventorytest.Host("10.0.0.6", "00:11:22:00:00:02"))
	phone, old := f.inv.Device("10.0.0.5").ID, f.inv.Device("10.0.0.6").ID
	f.window(at.Add(-30*time.Minute), true, false,
		events.TrafficRow{Src: "10.0.0.5", Dst: "1.1.1.1", Proto: 17, Port: 53, Bytes: 100, Packets: 1, Flows: 1},
		events.TrafficRow{Src: "10.0.0.6", Dst: "1.1.1.1", Proto: 17, Port: 53, Bytes: 20, Packets: 1, Flows: 1},
	)
	ctx := context.Background()
	bytesOut := func(id string) uint64 {
		t.Helper()
		page, err := f.p.DeviceTraffic(ctx, id, traffic.Filter{Since: at.Add(-2 * time.Hour), Until: at, By: traffic.ByPeer})
		if err != nil {
			t.Fatal(err)
		}
		var n uint64
		for _, it := range page.Items {
			n += it.BytesOut
		}
		return n
	}
	if a, b := bytesOut(phone), bytesOut(old); a != 100 || b != 20 {
		t.Fatalf("before the merge: %d and %d bytes out", a, b)
	}
	f.inv.Apply(events.KindDeviceMerged, events.DeviceMerged{Device: old, Into: phone}, at.Add(-10*time.Minute), "api", "test", phone)
	if n := bytesOut(phone); n != 120 {
		t.Errorf("after the merge, the group's traffic: %d bytes out, want 120", n)
	}
}
