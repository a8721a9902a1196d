package dns_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections/dns"
	"github.com/jocasta/jocasta/projections/inventory/inventorytest"
)

// thirtyDays fills a fixture with 30 days of hourly lookups of 20
// devices, each asking for 60 of 2,000 domains every hour (one dns.read
// per hour with every device's rows, answers for every domain), and
// returns the rows written and the first device's id.
func thirtyDays(b *testing.B) (*fixture, int, string) {
	f := newFixture(b)
	var hosts []events.SweepHost
	for d := range 20 {
		hosts = append(hosts, inventorytest.Host(fmt.Sprintf("10.0.0.%d", 10+d), fmt.Sprintf("00:11:22:00:00:%02x", d)))
	}
	start := at.Add(-30 * 24 * time.Hour)
	f.inv.Sweep(start, true, hosts...)
	rows := 0
	for h := range 30 * 24 {
		hour := start.Add(time.Duration(h) * time.Hour)
		var rs []events.DNSRow
		for d := range 20 {
			r := events.DNSRow{Hour: hour.Unix(), Client: fmt.Sprintf("10.0.0.%d", 10+d)}
			for k := range 60 {
				dom := (d*37 + k*11 + h*3) % 2000
				r.Lookups = append(r.Lookups, events.DNSLookup{Domain: fmt.Sprintf("host%d.example%d.com", dom, dom%17),
					Count: uint32(1 + (h+k)%9), Blocked: uint32(k % 2), Answers: []string{fmt.Sprintf("93.184.%d.%d", dom/250, dom%250)}})
			}
			rows += len(r.Lookups)
			rs = append(rs, r)
		}
		f.read("dnsfilter1:pi", "c", hour.Add(59*time.Minute), rs...)
	}
	return f, rows, f.inv.Device("10.0.0.10").ID
}

// BenchmarkDeviceLookups30Days asks for one device's lookups among 30 days
// of hourly rows of 20 devices: the default page of the last day, every
// page of the 30 days, and a domain search over the 30 days. It reports
// p99 per request, and the bytes of bbolt pages per (device, domain,
// hour) row (target ≤ 40).
func BenchmarkDeviceLookups30Days(b *testing.B) {
	f, rows, id := thirtyDays(b)
	ctx := context.Background()
	var used int
	_ = f.db.View(func(tx *bolt.Tx) error {
		for _, name := range f.p.Buckets() {
			s := tx.Bucket([]byte(name)).Stats()
			used += s.BranchAlloc + s.LeafAlloc
		}
		return nil
	})
	fi, _ := os.Stat(f.db.Path())
	end := at
	for _, bc := range []struct {
		name string
		f    dns.Filter
		all  bool
	}{
		{"last day, first page", dns.Filter{Since: end.Add(-24 * time.Hour), Until: end}, false},
		{"30 days, pages of 1000 in turn", dns.Filter{Since: end.Add(-30 * 24 * time.Hour), Until: end, Limit: 1000}, true},
		{"30 days, q", dns.Filter{Since: end.Add(-30 * 24 * time.Hour), Until: end, Q: "host7.example7"}, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var lat []time.Duration
			items := 0
			fl := bc.f
			for b.Loop() {
				t := time.Now()
				pg, err := f.p.DeviceLookups(ctx, id, fl)
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t))
				items += len(pg.Items)
				fl.Cursor = ""
				if bc.all && pg.NextCursor != nil {
					fl.Cursor = *pg.NextCursor // the next request asks for the next page
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(items)/float64(len(lat)), "items/op")
		})
	}
	b.Run("storage", func(b *testing.B) {
		for b.Loop() {
		}
		b.ReportMetric(float64(used)/float64(rows), "page-bytes/row")
		b.ReportMetric(float64(fi.Size())/float64(rows), "file-bytes/row")
	})
}

// BenchmarkApplyRead applies reads of 1,200 rows (20 clients × 60
// domains) to an hour that already holds them.
func BenchmarkApplyRead(b *testing.B) {
	f := newFixture(b)
	var rs []events.DNSRow
	for d := range 20 {
		r := events.DNSRow{Hour: at.Unix(), Client: fmt.Sprintf("10.0.0.%d", 10+d)}
		for k := range 60 {
			r.Lookups = append(r.Lookups, events.DNSLookup{Domain: fmt.Sprintf("host%d.example.com", d*60+k), Count: 1})
		}
		rs = append(rs, r)
	}
	b.ResetTimer()
	for b.Loop() {
		f.read("dnsfilter1:pi", "c", at.Add(time.Minute), rs...)
	}
	b.ReportMetric(float64(b.N*20*60)/b.Elapsed().Seconds(), "rows/s")
}
