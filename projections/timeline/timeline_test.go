package timeline_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jocasta/jocasta/projections"
	"github.com/jocasta/jocasta/projections/dns"
	"github.com/jocasta/jocasta/projections/timeline"
	"github.com/jocasta/jocasta/projections/traffic"
)

// changes is a change log of one page, newest first.
type changes []projections.ChangeEntry

func (c changes) ListEvents(_ context.Context, f projections.EventFilter) (projections.Page[projections.ChangeEntry], error) {
	var out []projections.ChangeEntry
	for _, e := range c {
		if e.DeviceID == f.Device && !e.Time.Before(*f.Since) && !e.Time.After(*f.Until) {
			out = append(out, e)
		}
	}
	return projections.Page[projections.ChangeEntry]{Items: out}, nil
}

// gone is a traffic and DNS model that no longer knows the device.
type gone struct{}

func (gone) DeviceTraffic(context.Context, string, traffic.Filter) (projections.Page[traffic.Item], error) {
	return projections.Page[traffic.Item]{}, projections.ErrNotFound
}

func (gone) DeviceHours(context.Context, string, dns.HourFilter) (projections.Page[dns.HourTotal], error) {
	return projections.Page[dns.HourTotal]{}, projections.ErrNotFound
}

func TestRead(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	var log changes
	for seq := 5; seq >= 1; seq-- {
		log = append(log, projections.ChangeEntry{ID: fmt.Sprint(seq), Seq: uint64(seq), DeviceID: "d", Kind: projections.ChangeEdited,
			Time: now.Add(-time.Duration(6-seq) * time.Hour), Summary: fmt.Sprint("change ", seq)})
	}
	ctx := context.Background()
	q := timeline.Query{Since: now.Add(-timeline.DefaultRange), Until: now, Limit: 2}
	for name, src := range map[string]timeline.Sources{
		"changes only":                      {Changes: log},
		"traffic and DNS forgot the device": {Changes: log, Traffic: gone{}, DNS: gone{}},
	} {
		t.Run(name, func(t *testing.T) {
			var got []string
			pq := q // each case pages from the newest
			for pages := 0; ; pages++ {
				page, err := timeline.Read(ctx, "d", src, pq)
				if err != nil || pages > 5 {
					t.Fatalf("page %d: %v", pages, err)
				}
				for _, it := range page.Items {
					got = append(got, it.Summary)
				}
				if page.NextCursor == nil {
					break
				}
				if err := timeline.CheckCursor(*page.NextCursor); err != nil {
					t.Fatalf("CheckCursor of a cursor Read gave: %v", err)
				}
				pq.Cursor = *page.NextCursor
			}
			if fmt.Sprint(got) != "[change 5 change 4 change 3 change 2 change 1]" {
				t.Fatalf("timeline %q, want the changes newest first", got)
			}
		})
	}
	for _, bad := range []string{"bogus", "e30"} { // e30 is {}: no time
		if err := timeline.CheckCursor(bad); !errors.Is(err, projections.ErrBadCursor) {
			t.Errorf("CheckCursor(%q) = %v, want ErrBadCursor", bad, err)
		}
		q.Cursor = bad
		if _, err := timeline.Read(ctx, "d", timeline.Sources{Changes: log}, q); !errors.Is(err, projections.ErrBadCursor) {
			t.Errorf("Read with cursor %q: %v, want ErrBadCursor", bad, err)
		}
	}
}
