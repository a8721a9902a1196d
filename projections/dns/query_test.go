package dns_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/dns"
	"github.com/jocasta/jocasta/projections/inventory/inventorytest"
)

func hoursText(items []dns.HourTotal) string {
	var b strings.Builder
	for _, it := range items {
		fmt.Fprintf(&b, "%s %d/%d %d", it.Hour.Format("15"), it.Lookups, it.Blocked, it.Domains)
		for _, d := range it.Top {
			fmt.Fprintf(&b, " %s=%d/%d", d.Domain, d.Count, d.Blocked)
		}
		b.WriteString(";")
	}
	return b.String()
}

// DeviceHours sums each hour of a device's lookups (over its addresses),
// with its busiest domains by count, and pages by hour.
func TestDeviceHours(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	h8, h9, h10 := at.Add(-2*time.Hour), at.Add(-time.Hour), at
	f.inv.Sweep(h8, true, inventorytest.Host("10.0.0.5", "00:11:22:00:00:01"), inventorytest.Host("10.0.0.7", "00:11:22:00:00:01"),
		inventorytest.Host("10.0.0.6", "00:11:22:00:00:02"))
	dev := f.inv.Device("10.0.0.5")
	f.read("dnsfilter2:agh", "c", at.Add(10*time.Minute),
		// 10:00, over both addresses: z 5 (3+2), b 4, a 4, c 1, y 1.
		row(h10, "10.0.0.5", "a.example", 4, 0),
		row(h10, "10.0.0.5", "z.example", 3, 1),
		row(h10, "10.0.0.7", "z.example", 2, 2),
		row(h10, "10.0.0.7", "b.example", 4, 0),
		row(h10, "10.0.0.7", "c.example", 1, 0),
		row(h10, "10.0.0.7", "y.example", 1, 1),
		// 09:00: none. 08:00: one domain.
		row(h8, "10.0.0.5", "m.example", 7, 0),
		// Another device's.
		row(h9, "10.0.0.6", "a.example", 9, 0),
	)
	all := dns.HourFilter{Since: h8, Until: at.Add(time.Hour)}
	want := "10 15/4 5 z.example=5/3 a.example=4/0 b.example=4/0;08 7/0 1 m.example=7/0;"
	pg, err := f.p.DeviceHours(ctx, dev.ID, all)
	if err != nil {
		t.Fatal(err)
	}
	if got := hoursText(pg.Items); got != want || pg.NextCursor != nil {
		t.Fatalf("hours:\n got %s\nwant %s (next %v)", got, want, pg.NextCursor)
	}

	// Paging: one hour at a time gives the same hours.
	var paged []dns.HourTotal
	for fl := all; ; {
		fl.Limit = 1
		pg, err := f.p.DeviceHours(ctx, dev.ID, fl)
		if err != nil {
			t.Fatal(err)
		}
		if len(pg.Items) != 1 {
			t.Fatalf("page of %d hours", len(pg.Items))
		}
		paged = append(paged, pg.Items...)
		if pg.NextCursor == nil {
			break
		}
		fl.Cursor = *pg.NextCursor
	}
	if got := hoursText(paged); got != want {
		t.Fatalf("paged:\n got %s\nwant %s", got, want)
	}

	for _, tc := range []struct {
		name string
		f    dns.HourFilter
		want string
	}{
		{"top 1", dns.HourFilter{Since: h10, Until: at.Add(time.Hour), Top: 1}, "10 15/4 5 z.example=5/3;"},
		{"top above the domains", dns.HourFilter{Since: h10, Until: at.Add(time.Hour), Top: 10},
			"10 15/4 5 z.example=5/3 a.example=4/0 b.example=4/0 c.example=1/0 y.example=1/1;"},
		{"until excludes its hour", dns.HourFilter{Since: h8, Until: h10}, "08 7/0 1 m.example=7/0;"},
		{"since holds the hour", dns.HourFilter{Since: h10.Add(30 * time.Minute), Until: h10.Add(31 * time.Minute)}, "10 15/4 5 z.example=5/3 a.example=4/0 b.example=4/0;"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg, err := f.p.DeviceHours(ctx, dev.ID, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if got := hoursText(pg.Items); got != tc.want || pg.NextCursor != nil {
				t.Fatalf("got %s\nwant %s", got, tc.want)
			}
		})
	}

	t.Run("no lookups", func(t *testing.T) {
		pg, err := f.p.DeviceHours(ctx, f.inv.Device("10.0.0.6").ID, dns.HourFilter{Since: h10, Until: at.Add(time.Hour)})
		if err != nil || pg.Items == nil || len(pg.Items) != 0 || pg.NextCursor != nil {
			t.Fatalf("%+v %v", pg, err)
		}
	})
	t.Run("unknown device", func(t *testing.T) {
		if _, err := f.p.DeviceHours(ctx, "dnope", all); !errors.Is(err, projections.ErrNotFound) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("bad cursors", func(t *testing.T) {
		lp, err := f.p.DeviceLookups(ctx, dev.ID, dns.Filter{Since: h8, Until: at.Add(time.Hour), Limit: 1})
		if err != nil || lp.NextCursor == nil {
			t.Fatalf("lookups %+v %v", lp, err)
		}
		for _, c := range []string{"zz", *lp.NextCursor} {
			fl := all
			fl.Cursor = c
			if _, err := f.p.DeviceHours(ctx, dev.ID, fl); !errors.Is(err, projections.ErrBadCursor) {
				t.Fatalf("cursor %q: %v", c, err)
			}
		}
	})
}

// BenchmarkDeviceHours30Days sums one device's 30 days of lookups (60
// domains an hour) into its 720 hours, one page: what a timeline of 30
// days asks for.
func BenchmarkDeviceHours30Days(b *testing.B) {
	f, _, id := thirtyDays(b)
	ctx := context.Background()
	fl := dns.HourFilter{Since: at.Add(-30 * 24 * time.Hour), Until: at, Limit: 1000}
	for b.Loop() {
		pg, err := f.p.DeviceHours(ctx, id, fl)
		if err != nil {
			b.Fatal(err)
		}
		if len(pg.Items) != 720 || pg.NextCursor != nil {
			b.Fatalf("%d hours, next %v", len(pg.Items), pg.NextCursor)
		}
	}
}
