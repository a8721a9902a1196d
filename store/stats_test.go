package store_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/store"
)

func TestStats(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "s.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	d1 := time.Date(2026, 11, 24, 23, 0, 0, 0, time.UTC)
	for i, at := range []time.Time{d1, d1.Add(30 * time.Minute), d1.Add(2 * time.Hour)} {
		e := events.MustNew(events.KindClockTicked, events.ClockTicked{At: at}, at)
		if i == 2 {
			e = events.MustNew(events.KindDeviceWatchSet, events.DeviceWatchSet{Watched: true}, at)
			e.Device = "d1"
		}
		if _, err := st.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	s, err := st.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Events != 3 || s.First != 1 || s.Head != 3 || s.Compacted || !s.Oldest.Equal(d1) || !s.Newest.Equal(d1.Add(2*time.Hour)) || s.FileSize == 0 {
		t.Fatalf("stats %+v", s)
	}
	if len(s.Kinds) != 2 || s.Kinds[0].Kind != events.KindClockTicked || s.Kinds[0].Events != 2 || s.Kinds[1].Events != 1 {
		t.Fatalf("kinds %+v", s.Kinds)
	}
	if len(s.Days) != 2 || s.Days[0].Day != "2026-11-24" || s.Days[0].Events != 2 || s.Days[1].Day != "2026-11-25" || s.Days[1].Events != 1 {
		t.Fatalf("days %+v", s.Days)
	}
	var total int64
	for _, k := range s.Kinds {
		total += k.Bytes
	}
	if total != s.Bytes || s.Bytes <= 0 {
		t.Fatalf("bytes %d, kinds sum %d", s.Bytes, total)
	}
	found := false
	for _, b := range s.Buckets {
		if b.Name == store.BucketLog {
			found = b.Keys == 3 && b.InUse > 0
		}
	}
	if !found {
		t.Fatalf("buckets %+v", s.Buckets)
	}
}
