package dns_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/dns"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/inventory/inventorytest"
)

var at = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

type fixture struct {
	t   testing.TB
	db  *bolt.DB
	p   *dns.Projection
	inv *inventorytest.Harness
	seq uint64
}

func newFixture(t testing.TB) *fixture {
	inv := inventorytest.New(t, inventory.Options{})
	p, err := dns.New(dns.Options{Addresses: inv.Inv})
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

func (f *fixture) read(source, cursor string, fin time.Time, rows ...events.DNSRow) {
	f.t.Helper()
	f.apply(events.KindDNSRead, events.DNSRead{ScanID: "r", Kind: "dnsfilter1", Started: fin, Finished: fin, Complete: true, Cursor: cursor, Rows: rows}, fin, source)
}

func row(h time.Time, client, domain string, n, blocked uint32, answers ...string) events.DNSRow {
	return events.DNSRow{Hour: h.Unix(), Client: client, Lookups: []events.DNSLookup{{Domain: domain, Count: n, Blocked: blocked, Answers: answers}}}
}

func text(items []dns.Item) string {
	var b strings.Builder
	for _, it := range items {
		fmt.Fprintf(&b, "%s %s %d/%d %v;", it.Hour.Format("15"), it.Domain, it.Count, it.Blocked, it.Answers)
	}
	return b.String()
}

func TestLookups(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	h9, h10 := at.Add(-time.Hour), at
	// Lookups of a client no device holds yet: kept under its address.
	f.read("dnsfilter1:pi", "c1", at.Add(5*time.Minute),
		row(h9, "10.0.0.5", "example.com", 3, 0, "93.184.215.14"),
		row(h10, "10.0.0.5", "ads.example.net", 2, 2),
		row(h10, "10.0.0.9", "other.example", 1, 0),
	)
	// A second server counts the same client: they add up.
	f.read("dnsnode:tech", "c2", at.Add(6*time.Minute),
		row(h10, "10.0.0.5", "ads.example.net", 1, 0),
		row(h10, "10.0.0.5", "example.com", 1, 0, "93.184.215.14", "2001:db8::14"),
	)
	if c, err := f.p.Cursor(ctx, "dnsfilter1:pi"); err != nil || c != "c1" {
		t.Fatalf("cursor %q %v", c, err)
	}
	if c, _ := f.p.Cursor(ctx, "dnsfilter2:none"); c != "" {
		t.Fatalf("cursor of an unknown source %q", c)
	}
	// The device appears later: its lookups attach to it.
	f.inv.Sweep(at.Add(30*time.Minute), true, inventorytest.Host("10.0.0.5", "00:11:22:00:00:01"), inventorytest.Host("10.0.0.6", "00:11:22:00:00:02"))
	nas := f.inv.Device("10.0.0.5").ID
	page, err := f.p.DeviceLookups(ctx, nas, dns.Filter{Since: h9, Until: at.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	want := "10 ads.example.net 3/2 [];10 example.com 1/0 [93.184.215.14 2001:db8::14];09 example.com 3/0 [93.184.215.14];"
	if got := text(page.Items); got != want || page.NextCursor != nil {
		t.Fatalf("lookups:\n got %s\nwant %s", got, want)
	}
	// Paging: one item at a time, newest first, then by domain.
	var got []dns.Item
	cur := ""
	for i := 0; i < 5; i++ {
		pg, err := f.p.DeviceLookups(ctx, nas, dns.Filter{Since: h9, Until: at.Add(time.Hour), Limit: 1, Cursor: cur})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, pg.Items...)
		if pg.NextCursor == nil {
			break
		}
		cur = *pg.NextCursor
	}
	if text(got) != want {
		t.Fatalf("paged:\n got %s\nwant %s", text(got), want)
	}
	// q, the range.
	if pg, _ := f.p.DeviceLookups(ctx, nas, dns.Filter{Since: h9, Until: at.Add(time.Hour), Q: "ADS"}); text(pg.Items) != "10 ads.example.net 3/2 [];" {
		t.Fatalf("q: %s", text(pg.Items))
	}
	if pg, _ := f.p.DeviceLookups(ctx, nas, dns.Filter{Since: h9, Until: h10}); text(pg.Items) != "09 example.com 3/0 [93.184.215.14];" {
		t.Fatalf("until excludes its hour: %s", text(pg.Items))
	}
	// A device with no lookups, an unknown device, a bad cursor.
	if pg, err := f.p.DeviceLookups(ctx, f.inv.Device("10.0.0.6").ID, dns.Filter{Since: h9, Until: at.Add(time.Hour)}); err != nil || len(pg.Items) != 0 || pg.Items == nil {
		t.Fatalf("no lookups: %+v %v", pg, err)
	}
	if _, err := f.p.DeviceLookups(ctx, "dnope", dns.Filter{Since: h9, Until: at}); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("unknown device: %v", err)
	}
	if _, err := f.p.DeviceLookups(ctx, nas, dns.Filter{Cursor: "zz"}); !errors.Is(err, projections.ErrBadCursor) {
		t.Fatalf("bad cursor: %v", err)
	}
	// The answers name traffic peers.
	if n := f.p.PeerName(nas, netip.MustParseAddr("2001:db8::14"), at.Add(20*time.Minute)); n != "example.com" {
		t.Fatalf("peer name %q", n)
	}
	if n := f.p.PeerName(nas, netip.MustParseAddr("192.0.2.99"), at); n != "" {
		t.Fatalf("peer name of an address no answer held: %q", n)
	}
	// A CDN address answered for two names in one hour: each device gets
	// the name it looked up itself; a device that looked up neither, the
	// first one recorded.
	h11 := h10.Add(time.Hour) // outside the ranges read below
	f.read("dnsfilter1:pi", "c2b", at.Add(7*time.Minute),
		row(h11, "10.0.0.9", "cdn-a.example", 1, 0, "198.51.100.7"),
		row(h11, "10.0.0.5", "cdn-b.example", 1, 0, "198.51.100.7"),
	)
	cdn := netip.MustParseAddr("198.51.100.7")
	if n := f.p.PeerName(nas, cdn, h11.Add(20*time.Minute)); n != "cdn-b.example" {
		t.Errorf("the CDN peer of the device that looked up cdn-b: %q", n)
	}
	if n := f.p.PeerName(f.inv.Device("10.0.0.6").ID, cdn, h11.Add(20*time.Minute)); n != "cdn-a.example" {
		t.Errorf("the CDN peer of a device that looked up neither: %q", n)
	}
	// The device's own lookup of the hour before beats another client's
	// of this hour.
	h12 := h11.Add(time.Hour)
	f.read("dnsfilter1:pi", "c2c", at.Add(8*time.Minute),
		row(h11, "10.0.0.5", "mine.example", 1, 0, "198.51.100.8"),
		row(h12, "10.0.0.9", "other.example", 1, 0, "198.51.100.8"),
	)
	if n := f.p.PeerName(nas, netip.MustParseAddr("198.51.100.8"), h12.Add(10*time.Minute)); n != "mine.example" {
		t.Errorf("the device's lookup of the hour before: %q, want mine.example", n)
	}

	// Reload: the dictionaries come back; new rows reuse their ids.
	f.load()
	f.read("dnsfilter1:pi", "c3", at.Add(50*time.Minute), row(h10, "10.0.0.5", "example.com", 1, 0))
	if pg, _ := f.p.DeviceLookups(ctx, nas, dns.Filter{Since: h10, Until: at.Add(time.Hour)}); text(pg.Items) != "10 ads.example.net 3/2 [];10 example.com 2/0 [93.184.215.14 2001:db8::14];" {
		t.Fatalf("after reload: %s", text(pg.Items))
	}
	// A read without a cursor keeps the one before.
	f.read("dnsfilter1:pi", "", at.Add(55*time.Minute))
	if c, _ := f.p.Cursor(ctx, "dnsfilter1:pi"); c != "c3" {
		t.Fatalf("cursor after a read without one: %q", c)
	}

	// Retention drops the hours before its cutoff; the purger asks first
	// whether there are any.
	cut := at
	if n, err := f.p.RowsBefore(ctx, cut); err != nil || n == 0 {
		t.Fatalf("rows before the cutoff: %d %v", n, err)
	}
	if n, _ := f.p.RowsBefore(ctx, h9); n != 0 {
		t.Fatalf("%d rows before the oldest hour", n)
	}
	f.apply(events.KindRetentionPurged, events.RetentionPurged{DNSBefore: &cut, Counts: map[string]int{}}, at.Add(5*time.Hour), "retention")
	if pg, _ := f.p.DeviceLookups(ctx, nas, dns.Filter{Since: h9, Until: at.Add(time.Hour)}); len(pg.Items) != 2 || !pg.Items[1].Hour.Equal(h10) {
		t.Fatalf("after retention: %s", text(pg.Items))
	}
}

// A device with two addresses: the lookups of both add up per domain.
func TestLookupsOfTwoAddresses(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.inv.Sweep(at, true, inventorytest.Host("10.0.0.5", "00:11:22:00:00:01"), inventorytest.Host("10.0.0.7", "00:11:22:00:00:01"))
	dev := f.inv.Device("10.0.0.5")
	if len(dev.Addresses) != 2 {
		t.Fatalf("the fixture's device has addresses %+v", dev.Addresses)
	}
	f.read("dnsfilter2:agh", "c", at.Add(10*time.Minute),
		row(at, "10.0.0.5", "b.example", 1, 0),
		row(at, "10.0.0.5", "d.example", 1, 0),
		row(at, "10.0.0.7", "a.example", 2, 1),
		row(at, "10.0.0.7", "b.example", 3, 0),
		row(at, "10.0.0.7", "c.example", 1, 0),
	)
	pg, err := f.p.DeviceLookups(ctx, dev.ID, dns.Filter{Since: at, Until: at.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(pg.Items); got != "10 a.example 2/1 [];10 b.example 4/0 [];10 c.example 1/0 [];10 d.example 1/0 [];" {
		t.Fatalf("two addresses: %s", got)
	}
}
