package store

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	bolt "go.etcd.io/bbolt"
)

// Stats reads the log in chunks of short read transactions; the figures
// do not depend on where the chunks end, the bytes are exactly those
// stored (key and value of each event).
func TestStatsChunks(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "s.db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 23, 22, 0, 0, 0, time.UTC)
	for i := range 7 {
		at := t0.Add(time.Duration(i) * time.Hour)
		e := events.MustNew(events.KindClockTicked, events.ClockTicked{At: at}, at)
		if i%3 == 2 {
			e = events.MustNew(events.KindDeviceWatchSet, events.DeviceWatchSet{Watched: i%2 == 0}, at)
			e.Device = "d1"
		}
		if _, err := st.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// What is stored: each event's 8-byte key and its value, by kind.
	evs, err := st.Read(1, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	var total int64
	err = st.db.View(func(tx *bolt.Tx) error {
		for _, e := range evs {
			n := int64(8 + len(tx.Bucket(bLog).Get(binary.BigEndian.AppendUint64(nil, e.Seq))))
			want[e.Kind] += n
			total += n
		}
		return nil
	})
	if err != nil || total < 7*100 {
		t.Fatalf("%d bytes stored: %v", total, err)
	}

	defer func(n int) { statsChunk = n }(statsChunk)
	var first LogStats
	for _, chunk := range []int{1, 2, 3, 7, 4096} {
		statsChunk = chunk
		s, err := st.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.Events != 7 || s.Bytes != total || len(s.Kinds) != 2 {
			t.Fatalf("chunk %d: %d events, %d bytes (want 7, %d), kinds %+v", chunk, s.Events, s.Bytes, total, s.Kinds)
		}
		for _, k := range s.Kinds {
			if k.Bytes != want[k.Kind] {
				t.Errorf("chunk %d: %s %d bytes, want %d", chunk, k.Kind, k.Bytes, want[k.Kind])
			}
		}
		// Seven hours from 22:00: two on the 23rd, five on the 24th.
		if len(s.Days) != 2 || s.Days[0].Events != 2 || s.Days[1].Events != 5 || s.Days[0].Bytes+s.Days[1].Bytes != total {
			t.Errorf("chunk %d: days %+v", chunk, s.Days)
		}
		s.FileSize, s.Buckets = 0, nil
		if chunk == 1 {
			first = s
		} else if !reflect.DeepEqual(s, first) {
			t.Errorf("chunk %d: %+v, chunk 1: %+v", chunk, s, first)
		}
	}
}
