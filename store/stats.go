package store

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
)

// KindStats counts a kind's events and their stored bytes.
type KindStats struct {
	Kind   string `json:"kind"`
	Events int    `json:"events"`
	Bytes  int64  `json:"bytes"`
}

// DayStats counts one UTC day's events and their stored bytes.
type DayStats struct {
	Day    string `json:"day"` // YYYY-MM-DD
	Events int    `json:"events"`
	Bytes  int64  `json:"bytes"`
}

// BucketStats is what bbolt's own statistics say of one bucket (as
// `bbolt stats` reports them): its keys and the bytes of branch and leaf
// data in use.
type BucketStats struct {
	Name    string `json:"name"`
	Keys    int    `json:"keys"`
	InUse   int    `json:"bytes_in_use"`
	Alloced int    `json:"bytes_allocated"`
}

// LogStats describes the log and the database file it lives in.
type LogStats struct {
	First uint64 `json:"first"`
	Head  uint64 `json:"head"`
	// Compacted says events before First were removed behind a snapshot.
	Compacted bool `json:"compacted"`
	// Oldest and Newest are the times of the first and last kept events.
	Oldest    *time.Time     `json:"oldest"`
	Newest    *time.Time     `json:"newest"`
	Events    int            `json:"events"`
	Bytes     int64          `json:"bytes"`
	Kinds     []KindStats    `json:"kinds"`
	Days      []DayStats     `json:"days"`
	Snapshots []SnapshotInfo `json:"snapshots"`
	Buckets   []BucketStats  `json:"buckets"`
	FileSize  int64          `json:"file_size"`
}

// statsChunk is how many events Stats reads per read transaction.
var statsChunk = 4096

// Stats reads the whole log (one short read transaction per chunk, as
// Verify does) and the file's bucket statistics. Of each event it reads
// the kind and the time, which the stored layout puts before the
// payload: of a value stored out of line, only its first part (a flow
// window's megabytes are not read; Verify checks them).
func (s *Store) Stats(ctx context.Context) (LogStats, error) {
	if s.isClosed() {
		return LogStats{}, fmt.Errorf("store: stats: %w", ErrClosed)
	}
	st := LogStats{First: s.First(), Head: s.Head()}
	st.Compacted = st.First > 1
	kinds := map[string]*KindStats{}
	days := map[string]*DayStats{}
	// The log is read in short read transactions of statsChunk events, so
	// that a long log does not hold one open while serve appends (a read
	// transaction keeps bbolt from growing the file's mapping).
	var next []byte
	for done := false; !done; {
		err := safeView(s.db, func(tx *bolt.Tx) error {
			c := tx.Bucket(bLog).Cursor()
			k, v := c.First()
			if next != nil {
				k, v = c.Seek(next)
			}
			for n := 0; ; n++ {
				if k == nil || len(k) != 8 || binary.BigEndian.Uint64(k) > st.Head {
					done = true // what was appended since is for the next call
					return nil
				}
				if n == statsChunk {
					next = append(next[:0], k...)
					return ctx.Err()
				}
				kind, t, vlen, err := statsHead(tx, k, v)
				if err != nil {
					return fmt.Errorf("event %x: %w: %w", k, ErrCorrupt, err)
				}
				size := int64(len(k)) + vlen
				st.Events++
				st.Bytes += size
				ks := kinds[string(kind)]
				if ks == nil {
					ks = &KindStats{Kind: string(kind)}
					kinds[ks.Kind] = ks
				}
				ks.Events++
				ks.Bytes += size
				t = t.UTC()
				day := t.Format(time.DateOnly)
				ds := days[day]
				if ds == nil {
					ds = &DayStats{Day: day}
					days[day] = ds
				}
				ds.Events++
				ds.Bytes += size
				if st.Oldest == nil {
					st.Oldest = &t
				}
				st.Newest = &t
				k, v = c.Next()
			}
		})
		if err != nil {
			return LogStats{}, fmt.Errorf("store: stats: %w", err)
		}
	}
	err := safeView(s.db, func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			bs := b.Stats()
			st.Buckets = append(st.Buckets, BucketStats{Name: string(name), Keys: bs.KeyN,
				InUse: bs.BranchInuse + bs.LeafInuse + bs.InlineBucketInuse, Alloced: bs.BranchAlloc + bs.LeafAlloc})
			return nil
		})
	})
	if err != nil {
		return LogStats{}, fmt.Errorf("store: stats: %w", err)
	}
	for _, k := range kinds {
		st.Kinds = append(st.Kinds, *k)
	}
	slices.SortFunc(st.Kinds, func(a, b KindStats) int {
		if c := cmp.Compare(b.Bytes, a.Bytes); c != 0 {
			return c
		}
		return cmp.Compare(a.Kind, b.Kind)
	})
	for _, d := range days {
		st.Days = append(st.Days, *d)
	}
	slices.SortFunc(st.Days, func(a, b DayStats) int { return cmp.Compare(a.Day, b.Day) })
	if st.Snapshots, err = s.Snapshots(); err != nil {
		return LogStats{}, err
	}
	if st.Snapshots == nil {
		st.Snapshots = []SnapshotInfo{} // [] in JSON, as every other list
	}
	if fi, err := os.Stat(s.db.Path()); err == nil {
		st.FileSize = fi.Size()
	}
	return st, nil
}

// statsHead returns the kind and time of the event stored under k as v,
// and the value's length. The stored layout begins {"seq":..,"id":..,
// "time":..,"kind":.., so they are read from the value's start: of an
// out-of-line value, its first part. A value in any other layout is read
// whole, with encoding/json. kind points into the value.
func statsHead(tx *bolt.Tx, k, v []byte) (kind []byte, t time.Time, n int64, err error) {
	head, n := v, int64(len(v))
	if isStub(v) {
		first, size, err := firstPart(tx, k, v)
		if err != nil {
			return nil, time.Time{}, 0, err
		}
		head, n = first, int64(size)
	}
	var r rawEnvelope
	if p := events.NewJSONScanner(head); r.splitHead(&p) {
		return r.kind, r.time, n, nil
	}
	full, _, err := logValue(tx, k, v)
	if err != nil {
		return nil, time.Time{}, 0, err
	}
	var hdr struct {
		Kind string    `json:"kind"`
		Time time.Time `json:"time"`
	}
	if err := json.Unmarshal(full, &hdr); err != nil {
		return nil, time.Time{}, 0, err
	}
	return []byte(hdr.Kind), hdr.Time, int64(len(full)), nil
}
