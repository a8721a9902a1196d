package dns_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/dns"
	"github.com/jocasta/jocasta/projections/inventory/inventorytest"
)

func domainsText(ds []dns.DomainTotal) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "%s %d/%d;", d.Domain, d.Count, d.Blocked)
	}
	return b.String()
}

func TestTopLookups(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	h8, h9, h10 := at.Add(-2*time.Hour), at.Add(-time.Hour), at
	f.inv.Sweep(at.Add(-3*time.Hour), true, inventorytest.Host("10.0.0.5", "00:11:22:00:00:01"), inventorytest.Host("10.0.0.6", "00:11:22:00:00:02"))
	nas, tv := f.inv.Device("10.0.0.5").ID, f.inv.Device("10.0.0.6").ID
	f.read("dnsfilter1:pi", "c1", at.Add(5*time.Minute),
		row(h8, "10.0.0.5", "old.example", 50, 0),
		events.DNSRow{Hour: h9.Unix(), Client: "10.0.0.5", Lookups: []events.DNSLookup{{Domain: "ads.example.net", Count: 4, Blocked: 4}, {Domain: "example.com", Count: 3}}},
		row(h9, "10.0.0.6", "tracker.example", 6, 5),
		row(h10, "10.0.0.6", "example.com", 2, 0),
		row(h10, "10.0.0.9", "example.com", 1, 0), // no device holds it
	)
	tests := []struct {
		name         string
		device       string
		since, until time.Time
		limit        int
		domains      string
		blocked      string
		clients      string
		lookups, blk uint64
	}{
		{"every device", "", h9, at.Add(time.Hour), 0,
			"example.com 6/0;tracker.example 6/5;ads.example.net 4/4;", "tracker.example 6/5;ads.example.net 4/4;",
			fmt.Sprintf("%s 8/5;%s 7/4;10.0.0.9 1/0;", tv, nas), 16, 9},
		{"limit", "", h9, at.Add(time.Hour), 1, "example.com 6/0;", "tracker.example 6/5;", tv + " 8/5;", 16, 9},
		{"until excludes its hour", "", h8, h10, 0,
			"old.example 50/0;tracker.example 6/5;ads.example.net 4/4;example.com 3/0;", "tracker.example 6/5;ads.example.net 4/4;",
			fmt.Sprintf("%s 57/4;%s 6/5;", nas, tv), 63, 9},
		{"one device", nas, h9, at.Add(time.Hour), 0, "ads.example.net 4/4;example.com 3/0;", "ads.example.net 4/4;", "", 7, 4},
		{"another", tv, h10, at.Add(time.Hour), 0, "example.com 2/0;", "", "", 2, 0},
		{"empty range", "", h10, h10, 0, "", "", "", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			top, err := f.p.TopLookups(ctx, tc.device, tc.since, tc.until, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			var clients strings.Builder
			for _, c := range top.Clients {
				fmt.Fprintf(&clients, "%s%s %d/%d;", c.DeviceID, c.Client, c.Count, c.Blocked)
			}
			if got := domainsText(top.Domains); got != tc.domains {
				t.Errorf("domains %s, want %s", got, tc.domains)
			}
			if got := domainsText(top.BlockedDomains); got != tc.blocked {
				t.Errorf("blocked %s, want %s", got, tc.blocked)
			}
			if clients.String() != tc.clients {
				t.Errorf("clients %s, want %s", clients.String(), tc.clients)
			}
			if top.Lookups != tc.lookups || top.Blocked != tc.blk {
				t.Errorf("totals %d/%d, want %d/%d", top.Lookups, top.Blocked, tc.lookups, tc.blk)
			}
			if top.Domains == nil || top.BlockedDomains == nil || top.Clients == nil {
				t.Error("nil lists")
			}
		})
	}
	if _, err := f.p.TopLookups(ctx, "dnope", h9, h10, 0); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("unknown device: %v", err)
	}
}

// BenchmarkTopLookups30Days sums the top domains and clients over the
// 30 days of BenchmarkDeviceLookups30Days (864,000 rows): the DNS page's
// last day and 30 days, and the device page's last day. It reports p99
// per request.
func BenchmarkTopLookups30Days(b *testing.B) {
	f, _, id := thirtyDays(b)
	ctx := context.Background()
	end := at
	for _, bc := range []struct {
		name   string
		device string
		span   time.Duration
	}{
		{"every device, last day", "", 24 * time.Hour},
		{"every device, 30 days", "", 30 * 24 * time.Hour},
		{"one device, last day", id, 24 * time.Hour},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				t := time.Now()
				top, err := f.p.TopLookups(ctx, bc.device, end.Add(-bc.span), end, 20)
				if err != nil || len(top.Domains) != 20 {
					b.Fatalf("%d domains, %v", len(top.Domains), err)
				}
				lat = append(lat, time.Since(t))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
