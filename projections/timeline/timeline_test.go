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

// TestRange: the defaults of a read's range, and Read refusing a range it
// cannot read whole (its traffic pages cover MaxRange).
func TestRange(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	since, until := now.Add(-48*time.Hour), now.Add(-time.Hour)
	for _, tc := range []struct {
		name          string
		since, until  *time.Time
		wantF, wantTo time.Time
	}{
		{"both left out", nil, nil, now.Add(-timeline.DefaultRange).UTC(), now.UTC()},
		{"since only", &since, nil, since.UTC(), now.UTC()},
		{"until only", nil, &until, until.Add(-timeline.DefaultRange).UTC(), until.UTC()},
		{"both", &since, &until, since.UTC(), until.UTC()},
	} {
		from, to := timeline.Range(tc.since, tc.until, now)
		if !from.Equal(tc.wantF) || !to.Equal(tc.wantTo) || from.Location() != time.UTC || to.Location() != time.UTC {
			t.Errorf("%s: Range = %v, %v; want %v, %v in UTC", tc.name, from, to, tc.wantF, tc.wantTo)
		}
	}
	src := timeline.Sources{Changes: changes{}}
	for name, q := range map[string]timeline.Query{
		"longer than MaxRange": {Since: now.Add(-timeline.MaxRange - time.Hour), Until: now, Limit: 1},
		"until before since":   {Since: now, Until: now.Add(-time.Hour), Limit: 1},
	} {
		if _, err := timeline.Read(context.Background(), "d", src, q); !errors.Is(err, timeline.ErrRange) {
			t.Errorf("%s: Read answered %v, want ErrRange", name, err)
		}
	}
	if _, err := timeline.Read(context.Background(), "d", src, timeline.Query{Since: now.Add(-timeline.MaxRange), Until: now, Limit: 1}); err != nil {
		t.Errorf("a range of exactly MaxRange: %v", err)
	}
}
