package traffic_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/netip"
	"os"
	"path/filepath"
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

func TestCountries(t *testing.T) {
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
	// here the embedded one unpacked to a file.
	gz, err := os.ReadFile(filepath.Join("data", "country.mmdb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
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
