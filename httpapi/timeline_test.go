package httpapi_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jocasta/jocasta/httpapi"
	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/dns"
	"github.com/jocasta/jocasta/projections/traffic"
)

func TestDeviceTimeline(t *testing.T) {
	e := newEnv(t, httpapi.Config{})
	resp, body := e.do("GET", "/api/devices/dev-nas/timeline?limit=2", "", bearer(tokRead))
	wantStatus(t, resp, body, 200)
	page := decode[projections.Page[httpapi.TimelineItem]](t, body)
	if len(page.Items) != 2 || page.Items[0].Kind != projections.ChangeEdited || page.Items[1].Kind != projections.ChangeDiscovered ||
		page.NextCursor == nil || !page.Items[0].Time.After(page.Items[1].Time) {
		t.Fatalf("first page: %s", body)
	}
	// The traffic hours are older: on the next page.
	resp, body = e.do("GET", "/api/devices/dev-nas/timeline?limit=2&cursor="+*page.NextCursor, "", bearer(tokRead))
	wantStatus(t, resp, body, 200)
	next := decode[projections.Page[httpapi.TimelineItem]](t, body)
	if len(next.Items) != 1 || next.Items[0].Kind != "traffic.hour" || !strings.Contains(next.Items[0].Summary, "in,") || next.NextCursor != nil {
		t.Fatalf("second page: %s", body)
	}
	resp, body = e.do("GET", "/api/devices/dev-none/timeline", "", bearer(tokRead))
	wantProblem(t, resp, body, 404, "device-not-found")
}

// A range the timeline refuses is a 400 that names the parameter to
// change, as on the other endpoints with since and until.
func TestDeviceTimelineBadQuery(t *testing.T) {
	e := newEnv(t, httpapi.Config{}) // now: 2026-03-02T12:00:00Z
	for _, tc := range []struct{ name, query, param string }{
		{"longer than 400 days", "since=2020-01-01T00:00:00Z", "since"},
		{"since after now", "since=2026-03-03T00:00:00Z", "since"},
		{"since after until", "since=2026-03-02T00:00:00Z&until=2026-03-01T00:00:00Z", "until"},
		{"a cursor it did not give", "cursor=bogus", "cursor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := e.do("GET", "/api/devices/dev-nas/timeline?"+tc.query, "", bearer(tokRead))
			p := wantProblem(t, resp, body, 400, "invalid-query")
			if len(p.Errors) != 1 || p.Errors[0].Parameter != tc.param {
				t.Fatalf("problem %+v", p)
			}
		})
	}
}

// tlInventory is the fake inventory with a change log the timeline can
// page through: entries newest first by seq, filtered by device and
// [Since, Until], cursor the offset of the next entry.
type tlInventory struct {
	*fakeInventory
	changes []projections.ChangeEntry
}

func (f *tlInventory) ListEvents(_ context.Context, flt projections.EventFilter) (projections.Page[projections.ChangeEntry], error) {
	var sel []projections.ChangeEntry
	for _, c := range f.changes {
		if c.DeviceID == flt.Device && (flt.Since == nil || !c.Time.Before(*flt.Since)) && (flt.Until == nil || !c.Time.After(*flt.Until)) {
			sel = append(sel, c)
		}
	}
	return offsetPage(sel, flt.Limit, flt.Cursor)
}

// offsetPage pages items by offset: the cursor is the next item's index.
func offsetPage[T any](items []T, limit int, cursor string) (projections.Page[T], error) {
	start := 0
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 0 || n > len(items) {
			return projections.Page[T]{}, projections.ErrBadCursor
		}
		start = n
	}
	limit = min(max(limit, 1), 1000)
	p := projections.Page[T]{Items: items[start:min(start+limit, len(items))]}
	if start+limit < len(items) {
		p.NextCursor = ptr(strconv.Itoa(start + limit))
	}
	return p, nil
}

// tlDNS holds dev-nas's lookups: one item per hour and domain, newest
// hour first, then by domain, as projections/dns lists them, and reads
// the same hours of a range as it does.
type tlDNS struct {
	inv   *fakeInventory
	items []dns.Item
}

func (f *tlDNS) inRange(since, until time.Time) []dns.Item {
	first, end := since.Unix()/3600, (until.Unix()+3599)/3600 // as projections/dns counts hours
	from := sort.Search(len(f.items), func(k int) bool { return f.items[k].Hour.Unix()/3600 < end })
	to := sort.Search(len(f.items), func(k int) bool { return f.items[k].Hour.Unix()/3600 < first })
	return f.items[from:max(from, to)]
}

func (f *tlDNS) DeviceLookups(ctx context.Context, id string, fl dns.Filter) (projections.Page[dns.Item], error) {
	if _, err := f.inv.Device(ctx, id); err != nil {
		return projections.Page[dns.Item]{}, err
	}
	return offsetPage(f.inRange(fl.Since, fl.Until), fl.Limit, fl.Cursor)
}

// tlDNSHours is tlDNS with DeviceHours, as projections/dns has it.
type tlDNSHours struct{ *tlDNS }

func (f tlDNSHours) DeviceHours(ctx context.Context, id string, fl dns.HourFilter) (projections.Page[dns.HourTotal], error) {
	if _, err := f.inv.Device(ctx, id); err != nil {
		return projections.Page[dns.HourTotal]{}, err
	}
	return offsetPage(hourTotals(f.inRange(fl.Since, fl.Until), fl.Top), fl.Limit, fl.Cursor)
}

// hourTotals sums lookups (newest hour first) per hour, with the top
// busiest domains by count, ties by name.
func hourTotals(items []dns.Item, top int) []dns.HourTotal {
	var out []dns.HourTotal
	for k := 0; k < len(items); {
		h := dns.HourTotal{Hour: items[k].Hour}
		var ds []dns.DomainTotal
		for ; k < len(items) && items[k].Hour.Equal(h.Hour); k++ {
			h.Lookups += items[k].Count
			h.Blocked += items[k].Blocked
			ds = append(ds, dns.DomainTotal{Domain: items[k].Domain, Count: items[k].Count, Blocked: items[k].Blocked})
		}
		slices.SortFunc(ds, func(a, b dns.DomainTotal) int {
			return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Domain, b.Domain))
		})
		h.Domains, h.Top = len(ds), ds[:min(top, len(ds))]
		out = append(out, h)
	}
	return out
}

// tlTraffic holds dev-nas's traffic hours, oldest first as
// projections/traffic lists them, each 100 B in and 50 B out.
type tlTraffic struct {
	inv   *fakeInventory
	hours []time.Time
}

func (f *tlTraffic) DeviceTraffic(ctx context.Context, id string, fl traffic.Filter) (projections.Page[traffic.Item], error) {
	if _, err := f.inv.Device(ctx, id); err != nil {
		return projections.Page[traffic.Item]{}, err
	}
	var sel []traffic.Item
	for _, h := range f.hours {
		if !h.Before(fl.Since.Truncate(time.Hour)) && h.Before(fl.Until) {
			sel = append(sel, traffic.Item{Key: h.Format(time.RFC3339), Hour: &h,
				Totals: traffic.Totals{BytesIn: 100, BytesOut: 50, FlowsIn: 1, FlowsOut: 1}})
		}
	}
	return offsetPage(sel, fl.Limit, fl.Cursor)
}

func (f *tlTraffic) Overview(context.Context, time.Time, time.Time, int) (traffic.Overview, error) {
	return traffic.Overview{}, nil
}

// newTimelineEnv is an API server over the fake inventory with changes,
// and the given DNS and traffic models (nil: none).
func newTimelineEnv(t *testing.T, changes []projections.ChangeEntry, d httpapi.DNS, tr httpapi.Traffic) *env {
	inv := newFakeInventory()
	e := &env{t: t, inv: inv, cmd: &fakeCommander{inv: inv}, auth: &fakeAuth{}, ready: &fakeReady{ready: true},
		clock: &fakeClock{t: time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)}, logs: &syncBuffer{}}
	h, err := httpapi.New(httpapi.Config{}, httpapi.Deps{Inventory: &tlInventory{inv, changes}, Commander: e.cmd, Auth: e.auth, Ready: e.ready,
		Log: zerolog.New(e.logs), Now: e.clock.Now, DNS: d, Traffic: tr})
	if err != nil {
		t.Fatal(err)
	}
	e.h = h
	return e
}

// dnsModels is the DNS model the timeline reads its hours from.
func dnsModels(inv *fakeInventory, items []dns.Item) map[string]httpapi.DNS {
	return map[string]httpapi.DNS{"hours": tlDNSHours{&tlDNS{inv: inv, items: items}}}
}

// walkTimeline reads every page of the timeline with limit, checking
// that each page but the last is full.
func walkTimeline(t *testing.T, e *env, query string, limit int) []httpapi.TimelineItem {
	t.Helper()
	var all []httpapi.TimelineItem
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10000 {
			t.Fatal("the pages do not end")
		}
		target := fmt.Sprintf("/api/devices/dev-nas/timeline?%s&limit=%d", query, limit)
		if cursor != "" {
			target += "&cursor=" + cursor
		}
		resp, body := e.do("GET", target, "", bearer(tokRead))
		wantStatus(t, resp, body, 200)
		page := decode[projections.Page[httpapi.TimelineItem]](t, body)
		if len(page.Items) > limit || page.NextCursor != nil && len(page.Items) != limit {
			t.Fatalf("page %d of %d items (limit %d), next %v", pages, len(page.Items), limit, page.NextCursor)
		}
		all = append(all, page.Items...)
		if page.NextCursor == nil {
			return all
		}
		cursor = *page.NextCursor
	}
}

func timelineText(items []httpapi.TimelineItem) string {
	var b strings.Builder
	for _, it := range items {
		fmt.Fprintf(&b, "%s %s %s\n", it.Time.Format(time.RFC3339Nano), it.Kind, it.Summary)
	}
	return b.String()
}

// Every DNS hour of the range is on the timeline, summed completely,
// however many domains an hour has (120 domains an hour for 30 days are
// 86,400 lookup rows).
func TestDeviceTimelineDNSEveryHour(t *testing.T) {
	inv := newFakeInventory()
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	var items []dns.Item
	for h := 1; h <= 720; h++ {
		for d := range 120 {
			items = append(items, dns.Item{Hour: now.Add(-time.Duration(h) * time.Hour), Domain: fmt.Sprintf("d%03d.example", d), Count: 1})
		}
	}
	for name, d := range dnsModels(inv, items) {
		t.Run(name, func(t *testing.T) {
			e := newTimelineEnv(t, nil, d, nil)
			resp, body := e.do("GET", "/api/devices/dev-nas/timeline?since=2026-01-31T12:00:00Z&limit=1000", "", bearer(tokRead))
			wantStatus(t, resp, body, 200)
			page := decode[projections.Page[httpapi.TimelineItem]](t, body)
			if len(page.Items) != 720 || page.NextCursor != nil {
				t.Fatalf("%d items, next %v; want 720 hours and no next page", len(page.Items), page.NextCursor)
			}
			for k, it := range page.Items {
				if want := now.Add(-time.Duration(k+1) * time.Hour); !it.Time.Equal(want) || it.Kind != "dns.hour" ||
					it.Summary != "120 lookups (0 blocked): d000.example, d001.example, d002.example" {
					t.Fatalf("item %d: %+v, want the hour %s with 120 lookups", k, it, want)
				}
			}
			// Paged by 100: the same hours.
			if got := walkTimeline(t, e, "since=2026-01-31T12:00:00Z", 100); timelineText(got) != timelineText(page.Items) {
				t.Fatalf("paged by 100: %d items\n%s", len(got), timelineText(got))
			}
		})
	}
}

// A DNS hour names its busiest domains, by count (ties by name), and
// says how many it looked up.
func TestDeviceTimelineDNS(t *testing.T) {
	inv := newFakeInventory()
	h := time.Date(2026, 3, 2, 11, 0, 0, 0, time.UTC)
	items := []dns.Item{
		{Hour: h, Domain: "a.example", Count: 1},
		{Hour: h, Domain: "b.example", Count: 5},
		{Hour: h, Domain: "c.example", Count: 2},
		{Hour: h, Domain: "d.example", Count: 5, Blocked: 1},
	}
	for name, d := range dnsModels(inv, items) {
		t.Run(name, func(t *testing.T) {
			e := newTimelineEnv(t, nil, d, nil)
			resp, body := e.do("GET", "/api/devices/dev-nas/timeline", "", bearer(tokRead))
			wantStatus(t, resp, body, 200)
			page := decode[projections.Page[httpapi.TimelineItem]](t, body)
			if len(page.Items) != 1 || page.Items[0].Kind != "dns.hour" || page.Items[0].Summary != "13 lookups (1 blocked): b.example, d.example, c.example" {
				t.Fatalf("items %+v\n%s", page.Items, body)
			}
			data := fmt.Sprint(page.Items[0].Data)
			if want := "map[blocked:1 distinct_domains:4 domains:[b.example d.example c.example] lookups:13]"; data != want {
				t.Fatalf("data %s, want %s", data, want)
			}
		})
	}
}

// Paging with any limit gives the one list that a single page gives:
// changes, traffic and DNS hours, newest first, items of one time traffic
// first, then DNS, then changes newest first, none lost or repeated.
func TestDeviceTimelinePaging(t *testing.T) {
	inv := newFakeInventory()
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	change := func(seq uint64, tm, device string) projections.ChangeEntry {
		return projections.ChangeEntry{ID: fmt.Sprintf("e%d", seq), Seq: seq, Time: at(tm), Kind: projections.ChangeEdited, DeviceID: device,
			Source: "api", Actor: "test", Summary: fmt.Sprintf("change %d", seq)}
	}
	changes := []projections.ChangeEntry{ // newest first by seq
		change(20, "2026-03-02T12:00:00Z", "dev-nas"),
		change(17, "2026-03-02T11:00:00Z", "dev-phone"),
		change(16, "2026-03-02T10:00:00Z", "dev-nas"),
		change(15, "2026-03-02T10:00:00Z", "dev-nas"),
		change(12, "2026-03-02T09:30:00.5Z", "dev-nas"),
		change(7, "2026-03-02T06:00:00.25Z", "dev-nas"),
		change(3, "2026-03-02T00:00:00Z", "dev-nas"),
		change(2, "2026-03-01T23:59:59Z", "dev-nas"),
	}
	tr := &tlTraffic{inv: inv}
	var lookups []dns.Item
	for h := at("2026-03-02T12:00:00Z"); !h.Before(at("2026-03-01T22:00:00Z")); h = h.Add(-time.Hour) {
		if h.Hour()%2 == 0 {
			for k := range h.Hour()%4 + 1 {
				n := uint64((h.Hour()+5*k)%7 + 1)
				lookups = append(lookups, dns.Item{Hour: h, Domain: string(rune('a'+k)) + ".example", Count: n, Blocked: n % 2})
			}
		}
	}
	for h := at("2026-03-01T22:00:00Z"); !h.After(at("2026-03-02T12:00:00Z")); h = h.Add(time.Hour) {
		if h.Hour()%3 != 1 {
			tr.hours = append(tr.hours, h)
		}
	}

	// want is the timeline of [since, until], built from the data.
	want := func(since, until time.Time) string {
		type row struct {
			t    time.Time
			rank int // traffic, DNS, then changes newest first
			text string
		}
		var rows []row
		keep := func(tm time.Time) bool { return !tm.Before(since) && !tm.After(until) }
		for _, h := range tr.hours {
			if keep(h) {
				rows = append(rows, row{h, 0, "traffic.hour 100 B in, 50 B out in 2 flows"})
			}
		}
		for _, h := range hourTotals(lookups, 3) {
			if keep(h.Hour) {
				var top []string
				for _, d := range h.Top {
					top = append(top, d.Domain)
				}
				rows = append(rows, row{h.Hour, 1, fmt.Sprintf("dns.hour %d lookups (%d blocked): %s", h.Lookups, h.Blocked, strings.Join(top, ", "))})
			}
		}
		for _, c := range changes {
			if c.DeviceID == "dev-nas" && keep(c.Time) {
				rows = append(rows, row{c.Time, 1000 - int(c.Seq), c.Kind + " " + c.Summary})
			}
		}
		slices.SortFunc(rows, func(a, b row) int { return cmp.Or(b.t.Compare(a.t), cmp.Compare(a.rank, b.rank)) })
		var b strings.Builder
		for _, r := range rows {
			fmt.Fprintf(&b, "%s %s\n", r.t.Format(time.RFC3339Nano), r.text)
		}
		return b.String()
	}

	for name, d := range dnsModels(inv, lookups) {
		e := newTimelineEnv(t, changes, d, tr)
		for _, q := range []struct{ query, since, until string }{
			{"since=2026-03-02T00:00:00Z", "2026-03-02T00:00:00Z", "2026-03-02T12:00:00Z"},
			{"since=2026-03-01T22:30:00Z&until=2026-03-02T10:00:00.5Z", "2026-03-01T22:30:00Z", "2026-03-02T10:00:00.5Z"},
		} {
			wantText := want(at(q.since), at(q.until))
			one := walkTimeline(t, e, q.query, 1000)
			if got := timelineText(one); got != wantText {
				t.Fatalf("%s, %s, one page:\n got:\n%s\nwant:\n%s", name, q.query, got, wantText)
			}
			for _, limit := range []int{1, 2, 3, 5} {
				t.Run(fmt.Sprintf("%s/%s/limit=%d", name, q.query, limit), func(t *testing.T) {
					if got := timelineText(walkTimeline(t, e, q.query, limit)); got != wantText {
						t.Fatalf("paged:\n got:\n%s\nwant:\n%s", got, wantText)
					}
				})
			}
		}
	}
}
