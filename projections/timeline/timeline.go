package timeline

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/dns"
	"github.com/jocasta/jocasta/projections/traffic"
)

// Item is one entry of a device's timeline: a change-log entry, or an
// hour of its traffic or of its DNS lookups.
type Item struct {
	Time    time.Time `json:"time"`
	Kind    string    `json:"kind"`
	Summary string    `json:"summary"`
	Source  string    `json:"source"`
	Actor   string    `json:"actor"`
	// Data is the change entry's data (nil when it has none), a
	// traffic.Totals for KindTraffic, a DNSHour for KindDNS.
	Data any `json:"data"`
	// key orders items of one time: "t" (traffic), "d" (DNS), then
	// change entries by seq, newest first.
	key string
}

// DNSHour is the data of a KindDNS item.
type DNSHour struct {
	Blocked         uint64   `json:"blocked"`
	DistinctDomains int      `json:"distinct_domains"`
	Domains         []string `json:"domains"` // the busiest TopDomains, most first
	Lookups         uint64   `json:"lookups"`
}

// Kinds of the hourly items.
const (
	KindTraffic = "traffic.hour"
	KindDNS     = "dns.hour"
)

// Ranges: the default when since is left out, and the longest a caller
// should ask for.
const (
	DefaultRange = 7 * 24 * time.Hour
	MaxRange     = 400 * 24 * time.Hour
)

// TopDomains is how many of an hour's busiest domains a KindDNS item
// names.
const TopDomains = 3

// Changes is the change log (projections/inventory's ListEvents): entries
// newest first by seq, their times following their seqs.
type Changes interface {
	ListEvents(ctx context.Context, f projections.EventFilter) (projections.Page[projections.ChangeEntry], error)
}

// Traffic is projections/traffic's per-device read; with traffic.ByHour
// it lists hours oldest first.
type Traffic interface {
	DeviceTraffic(ctx context.Context, id string, f traffic.Filter) (projections.Page[traffic.Item], error)
}

// DNS is projections/dns's lookups summed per hour, newest hour first.
type DNS interface {
	DeviceHours(ctx context.Context, id string, f dns.HourFilter) (projections.Page[dns.HourTotal], error)
}

// Sources are what a timeline is read from. Changes is required; Traffic
// and DNS are nil when not recorded (the timeline then has no such
// items).
type Sources struct {
	Changes Changes
	Traffic Traffic
	DNS     DNS
}

// Query selects a page: the items in [Since, Until], at most Limit (at
// least 1), after Cursor (a page's NextCursor; empty for the newest).
type Query struct {
	Since, Until time.Time
	Limit        int
	Cursor       string
}

// cursor is where the previous page ended: items strictly older (time,
// then key) come next.
type cursor struct {
	T time.Time `json:"t"`
	K string    `json:"k"`
}

// ErrBadCursor is returned (wrapping projections.ErrBadCursor) by
// CheckCursor and Read for a cursor Read did not give.
var ErrBadCursor = fmt.Errorf("timeline: %w", projections.ErrBadCursor)

// CheckCursor returns ErrBadCursor unless s is empty or a cursor Read
// gave, so a caller can refuse it with its other parameters.
func CheckCursor(s string) error {
	_, err := parseCursor(s)
	return err
}

func parseCursor(s string) (*cursor, error) {
	if s == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	c := &cursor{}
	if err != nil || json.Unmarshal(b, c) != nil || c.T.IsZero() {
		return nil, ErrBadCursor
	}
	return c, nil
}

// before reports whether it comes after c in the timeline's order
// (newest first).
func (it *Item) before(c *cursor) bool {
	if c == nil {
		return true
	}
	if !it.Time.Equal(c.T) {
		return it.Time.Before(c.T)
	}
	return it.key < c.K
}

// ErrRange is returned by Read for an until before since or a range
// longer than MaxRange (its callers check the range first, to answer it
// in their words).
var ErrRange = fmt.Errorf("timeline: since must be at or before until, at most %d days before", MaxRange/(24*time.Hour))

// Range is the range of a timeline read at now from the caller's since
// and until (nil when left out): until defaults to now, since to
// DefaultRange before until.
func Range(since, until *time.Time, now time.Time) (from, to time.Time) {
	to = now.UTC()
	if until != nil {
		to = until.UTC()
	}
	from = to.Add(-DefaultRange)
	if since != nil {
		from = since.UTC()
	}
	return from, to
}

// Read returns a page of the device's timeline, newest first. It does
// not check that the device exists (its callers do, to answer an unknown
// or merged device as they answer it elsewhere); a traffic or DNS model
// that no longer knows the device gives no items.
func Read(ctx context.Context, id string, src Sources, q Query) (projections.Page[Item], error) {
	cur, err := parseCursor(q.Cursor)
	if err != nil {
		return projections.Page[Item]{}, err
	}
	// The traffic hours are read at most 10 pages of 1,000 (below): a
	// longer range would lose its newest hours.
	if q.Until.Before(q.Since) || q.Until.Sub(q.Since) > MaxRange {
		return projections.Page[Item]{}, ErrRange
	}
	limit := max(q.Limit, 1)
	since, until := q.Since, q.Until
	// Each stream (changes, traffic hours, DNS hours) gives its items in
	// [since, upTo] that come after the cursor: all of them, or at least
	// limit of the newest and more = true. The page is the newest limit
	// of them all; the next cursor is its last item.
	upTo := until
	if cur != nil && cur.T.Before(upTo) {
		upTo = cur.T
	}
	var items []Item
	more := false
	add := func(it Item) {
		if !it.Time.Before(since) && !it.Time.After(upTo) && it.before(cur) {
			items = append(items, it)
		}
	}

	// Changes (newest first by seq; times follow seqs).
	ef := projections.EventFilter{Device: id, Since: &since, Until: &upTo, Limit: 1000}
	for want := limit + 1; ; {
		page, err := src.Changes.ListEvents(ctx, ef)
		if err != nil {
			return projections.Page[Item]{}, fmt.Errorf("timeline: changes of %s: %w", id, err)
		}
		n := len(items)
		for _, e := range page.Items {
			var data any
			if e.Data != nil {
				data = e.Data
			}
			add(Item{Time: e.Time.UTC(), Kind: e.Kind, Summary: e.Summary, Source: e.Source, Actor: e.Actor, Data: data,
				key: fmt.Sprintf("c%020d-%s", e.Seq, e.ID)})
		}
		want -= len(items) - n
		if page.NextCursor == nil {
			break
		}
		if want <= 0 {
			more = true
			break
		}
		ef.Cursor = *page.NextCursor
	}

	// Traffic by hour.
	if src.Traffic != nil {
		// Hours come oldest first: read them all (at most one per hour of
		// the range) and keep the newest.
		f := traffic.Filter{Since: since.Truncate(time.Hour), Until: upTo.Add(time.Nanosecond), By: traffic.ByHour, Limit: 1000}
		for pages := 0; pages < 10; pages++ { // 10 pages of 1,000 hours cover the longest range
			page, err := src.Traffic.DeviceTraffic(ctx, id, f)
			if err != nil && !errors.Is(err, projections.ErrNotFound) {
				return projections.Page[Item]{}, fmt.Errorf("timeline: traffic of %s: %w", id, err)
			}
			for _, it := range page.Items {
				if it.Hour == nil {
					continue
				}
				add(Item{Time: it.Hour.UTC(), Kind: KindTraffic, Source: "flows", Actor: "flows", Data: it.Totals, key: "t"}) // Summary: summarize
			}
			if page.NextCursor == nil || len(page.Items) == 0 {
				break
			}
			f.Cursor = *page.NextCursor
		}
	}

	// DNS lookups, summed per hour: the newest limit hours that belong on
	// this page or later ones (hours starting in [since, upTo], without
	// the one at the cursor when the previous page showed it).
	if src.DNS != nil {
		dnsSince := since.Truncate(time.Hour)
		if dnsSince.Before(since) {
			dnsSince = dnsSince.Add(time.Hour)
		}
		dnsUntil := upTo.Truncate(time.Second).Add(time.Second) // the hour starting at upTo too
		if cur != nil && cur.T.Equal(upTo) && cur.T.Truncate(time.Hour).Equal(cur.T) && !(&Item{Time: cur.T, key: "d"}).before(cur) {
			dnsUntil = cur.T // the previous page showed that hour
		}
		hours, older, err := dnsHours(ctx, src.DNS, id, dns.HourFilter{Since: dnsSince, Until: dnsUntil, Top: TopDomains, Limit: limit})
		if err != nil {
			return projections.Page[Item]{}, err
		}
		for _, h := range hours {
			top := make([]string, len(h.Top))
			for k, d := range h.Top {
				top[k] = d.Domain
			}
			add(Item{Time: h.Hour.UTC(), Kind: KindDNS, Source: "dns", Actor: "dns",
				Data: DNSHour{Lookups: h.Lookups, Blocked: h.Blocked, Domains: top, DistinctDomains: h.Domains}, key: "d"}) // Summary: summarize
		}
		more = more || older
	}

	slices.SortFunc(items, func(a, b Item) int {
		if c := b.Time.Compare(a.Time); c != 0 {
			return c
		}
		return cmp.Compare(b.key, a.key)
	})
	// One item per time and key (a stream's pages never overlap, but a
	// page boundary read twice must not show twice).
	items = slices.CompactFunc(items, func(a, b Item) bool { return a.Time.Equal(b.Time) && a.key == b.key })
	out := projections.Page[Item]{Items: items}
	if len(items) > limit || more && len(items) == limit {
		out.Items = items[:limit]
		last := out.Items[len(out.Items)-1]
		b, err := json.Marshal(cursor{T: last.Time, K: last.key})
		if err != nil {
			return projections.Page[Item]{}, fmt.Errorf("timeline: cursor of %s: %w", id, err)
		}
		c := base64.RawURLEncoding.EncodeToString(b)
		out.NextCursor = &c
	}
	if out.Items == nil {
		out.Items = []Item{}
	}
	for i := range out.Items {
		summarize(&out.Items[i])
	}
	return out, nil
}

// summarize words an hourly item's totals, for the items of the page
// only (a range holds up to thousands of hours).
func summarize(it *Item) {
	switch d := it.Data.(type) {
	case traffic.Totals:
		it.Summary = fmt.Sprintf("%s in, %s out in %d flows", humanBytes(d.BytesIn), humanBytes(d.BytesOut), d.FlowsIn+d.FlowsOut)
	case DNSHour:
		it.Summary = fmt.Sprintf("%d lookups (%d blocked): %s", d.Lookups, d.Blocked, strings.Join(d.Domains, ", "))
	}
}

// humanBytes says a byte count in a unit a person reads.
func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// dnsHours returns the newest f.Limit hours of the device's lookups in
// f's range, each summed completely, and whether older ones remain.
func dnsHours(ctx context.Context, src DNS, id string, f dns.HourFilter) ([]dns.HourTotal, bool, error) {
	var out []dns.HourTotal
	for {
		page, err := src.DeviceHours(ctx, id, f)
		switch {
		case errors.Is(err, projections.ErrNotFound):
			return nil, false, nil // merged or deleted since the caller found it
		case err != nil:
			return nil, false, fmt.Errorf("timeline: lookups of %s: %w", id, err)
		}
		out = append(out, page.Items...)
		if page.NextCursor == nil {
			return out, false, nil
		}
		if len(out) >= f.Limit {
			return out[:f.Limit], true, nil
		}
		if *page.NextCursor == f.Cursor {
			return nil, false, fmt.Errorf("timeline: lookups of %s: the cursor %q did not move", id, f.Cursor)
		}
		f.Cursor = *page.NextCursor
	}
}
