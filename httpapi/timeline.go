package httpapi

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/dns"
	"github.com/jocasta/jocasta/projections/traffic"
)

// TimelineItem is one entry of a device's timeline: a change-log entry,
// or an hour of its traffic or of its DNS lookups.
type TimelineItem struct {
	Time    time.Time `json:"time"`
	Kind    string    `json:"kind"`
	Summary string    `json:"summary"`
	Source  string    `json:"source"`
	Actor   string    `json:"actor"`
	Data    any       `json:"data"`
	// key orders items of one time: "t" (traffic), "d" (DNS), then
	// change entries by seq, newest first.
	key string
}

// Kinds of the hourly timeline items.
const (
	timelineTraffic = "traffic.hour"
	timelineDNS     = "dns.hour"
)

// Timeline ranges: the default when since is left out, and the longest.
const (
	defaultTimelineRange = 7 * 24 * time.Hour
	maxTimelineRange     = 400 * 24 * time.Hour
)

var timelineParams = map[string]bool{"since": false, "until": false, "limit": false, "cursor": false}

// timelineCursor is where the previous page ended: items strictly older
// (time, then key) come next.
type timelineCursor struct {
	T time.Time `json:"t"`
	K string    `json:"k"`
}

// before reports whether it comes after c in the timeline's order
// (newest first).
func (it *TimelineItem) before(c *timelineCursor) bool {
	if c == nil {
		return true
	}
	if !it.Time.Equal(c.T) {
		return it.Time.Before(c.T)
	}
	return it.key < c.K
}

// deviceTimeline answers GET /api/devices/{id}/timeline: the device's
// changes and, where recorded, its hourly traffic and DNS totals, in one
// list, newest first.
func (s *server) deviceTimeline(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r, timelineParams)
	if err != nil {
		return err
	}
	sp, up := q.timeRange()
	until := s.now().UTC()
	if up != nil {
		until = *up
	}
	since := until.Add(-defaultTimelineRange)
	if sp != nil {
		since = *sp
	}
	if up == nil && sp != nil && until.Before(since) {
		q.fail("since", "later than now: give a since in the past, or an until after it")
	}
	if until.Sub(since) > maxTimelineRange {
		q.fail("since", fmt.Sprintf("the range is longer than %d days: narrow since and until", maxTimelineRange/(24*time.Hour)))
	}
	limit := q.limit()
	var cur *timelineCursor
	if raw := q.cursor(); raw != "" {
		b, err := base64.RawURLEncoding.DecodeString(raw)
		cur = &timelineCursor{}
		if err != nil || json.Unmarshal(b, cur) != nil || cur.T.IsZero() {
			q.fail("cursor", "not a cursor this endpoint gave: start again without it")
		}
	}
	if err := q.err(); err != nil {
		return err
	}
	id, err := deviceID(r)
	if err != nil {
		return err
	}
	if _, err := s.inv.Device(r.Context(), id); err != nil {
		if errors.Is(err, projections.ErrNotFound) {
			return deviceNotFound(id, err) // device-merged for a merged id
		}
		return err
	}
	// Each stream (changes, traffic hours, DNS hours) gives its items in
	// [since, upTo] that come after the cursor: all of them, or at least
	// limit of the newest and more = true. The page is the newest limit
	// of them all; the next cursor is its last item.
	upTo := until
	if cur != nil && cur.T.Before(upTo) {
		upTo = cur.T
	}
	var items []TimelineItem
	more := false
	add := func(it TimelineItem) {
		if !it.Time.Before(since) && !it.Time.After(upTo) && it.before(cur) {
			items = append(items, it)
		}
	}

	// Changes (newest first by seq; times follow seqs).
	ef := projections.EventFilter{Device: id, Since: &since, Until: &upTo, Limit: 1000}
	for want := limit + 1; ; {
		page, err := s.inv.ListEvents(r.Context(), ef)
		if err != nil {
			return fmt.Errorf("httpapi: timeline of %s: %w", id, err)
		}
		n := len(items)
		for _, e := range page.Items {
			var data any
			if e.Data != nil {
				data = e.Data
			}
			add(TimelineItem{Time: e.Time.UTC(), Kind: e.Kind, Summary: e.Summary, Source: e.Source, Actor: e.Actor, Data: data,
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
	if s.flows != nil {
		// Hours come oldest first: read them all (at most one per hour of
		// the range) and keep the newest.
		f := traffic.Filter{Since: since.Truncate(time.Hour), Until: upTo.Add(time.Nanosecond), By: traffic.ByHour, Limit: 1000}
		for pages := 0; pages < 10; pages++ { // 10 pages of 1,000 hours cover the longest range
			page, err := s.flows.DeviceTraffic(r.Context(), id, f)
			if err != nil && !errors.Is(err, projections.ErrNotFound) {
				return fmt.Errorf("httpapi: timeline traffic of %s: %w", id, err)
			}
			for _, it := range page.Items {
				if it.Hour == nil {
					continue
				}
				add(TimelineItem{Time: it.Hour.UTC(), Kind: timelineTraffic, Source: "flows", Actor: "flows",
					Summary: fmt.Sprintf("%s in, %s out in %d flows", humanBytes(it.BytesIn), humanBytes(it.BytesOut), it.FlowsIn+it.FlowsOut),
					Data:    it.Totals, key: "t"})
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
	if s.dns != nil {
		dnsSince := since.Truncate(time.Hour)
		if dnsSince.Before(since) {
			dnsSince = dnsSince.Add(time.Hour)
		}
		dnsUntil := upTo.Truncate(time.Second).Add(time.Second) // the hour starting at upTo too
		if cur != nil && cur.T.Equal(upTo) && cur.T.Truncate(time.Hour).Equal(cur.T) && !(&TimelineItem{Time: cur.T, key: "d"}).before(cur) {
			dnsUntil = cur.T // the previous page showed that hour
		}
		hours, older, err := s.dnsHours(r.Context(), id, dns.HourFilter{Since: dnsSince, Until: dnsUntil, Top: timelineTopDomains, Limit: limit})
		if err != nil {
			return err
		}
		for _, h := range hours {
			top := make([]string, len(h.Top))
			for k, d := range h.Top {
				top[k] = d.Domain
			}
			add(TimelineItem{Time: h.Hour.UTC(), Kind: timelineDNS, Source: "dns", Actor: "dns",
				Summary: fmt.Sprintf("%d lookups (%d blocked): %s", h.Lookups, h.Blocked, strings.Join(top, ", ")),
				Data:    map[string]any{"lookups": h.Lookups, "blocked": h.Blocked, "domains": top, "distinct_domains": h.Domains}, key: "d"})
		}
		more = more || older
	}

	slices.SortFunc(items, func(a, b TimelineItem) int {
		if c := b.Time.Compare(a.Time); c != 0 {
			return c
		}
		return cmp.Compare(b.key, a.key)
	})
	// One item per time and key (a stream's pages never overlap, but a
	// page boundary read twice must not show twice).
	items = slices.CompactFunc(items, func(a, b TimelineItem) bool { return a.Time.Equal(b.Time) && a.key == b.key })
	out := projections.Page[TimelineItem]{Items: items}
	if len(items) > limit || more && len(items) == limit {
		out.Items = items[:limit]
		last := out.Items[len(out.Items)-1]
		b, _ := json.Marshal(timelineCursor{T: last.Time, K: last.key})
		c := base64.RawURLEncoding.EncodeToString(b)
		out.NextCursor = &c
	}
	if out.Items == nil {
		out.Items = []TimelineItem{}
	}
	return writeJSON(w, r, http.StatusOK, out)
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

// timelineTopDomains is how many of an hour's busiest domains a dns.hour
// item names.
const timelineTopDomains = 3

// dnsHours returns the newest f.Limit hours of the device's lookups in
// f's range, each summed completely, and whether older ones remain.
func (s *server) dnsHours(ctx context.Context, id string, f dns.HourFilter) ([]dns.HourTotal, bool, error) {
	var out []dns.HourTotal
	for {
		page, err := s.dns.DeviceHours(ctx, id, f)
		switch {
		case errors.Is(err, projections.ErrNotFound):
			return nil, false, nil // merged or deleted since the inventory said it exists
		case err != nil:
			return nil, false, fmt.Errorf("httpapi: timeline lookups of %s: %w", id, err)
		}
		out = append(out, page.Items...)
		if page.NextCursor == nil {
			return out, false, nil
		}
		if len(out) >= f.Limit {
			return out[:f.Limit], true, nil
		}
		if *page.NextCursor == f.Cursor {
			return nil, false, fmt.Errorf("httpapi: timeline lookups of %s: the cursor %q did not move", id, f.Cursor)
		}
		f.Cursor = *page.NextCursor
	}
}
