package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
)

// restoreFixture is a store with a snapshot at seq 0 of buckets "a" (many
// values, an empty one, nested buckets two deep with sequences) and "b",
// taken before the buckets were changed afterwards (and "c" made, which
// the snapshot does not hold). want is the dump of "a", "b" and "c" as
// the snapshot holds them.
func restoreFixture(t *testing.T) (*Store, *Snapshot) {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "j.db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	names := []string{"a", "b", "c"}
	err = s.Update(func(tx *bolt.Tx) error {
		a, err := tx.CreateBucket([]byte("a"))
		if err != nil {
			return err
		}
		for k := range 100 {
			if err := a.Put(fmt.Appendf(nil, "k%03d", k), fmt.Appendf(nil, "value %d", k)); err != nil {
				return err
			}
		}
		if err := a.Put([]byte("empty"), nil); err != nil {
			return err
		}
		n1, err := a.CreateBucket([]byte("n1"))
		if err != nil {
			return err
		}
		for k := range 30 {
			if err := n1.Put(fmt.Appendf(nil, "n%02d", k), []byte("x")); err != nil {
				return err
			}
		}
		n2, err := n1.CreateBucket([]byte("n2"))
		if err == nil {
			err = n2.Put([]byte("deep"), []byte("y"))
		}
		if err == nil {
			err = n2.SetSequence(9)
		}
		if err == nil {
			err = n1.SetSequence(8)
		}
		if err == nil {
			err = a.SetSequence(7)
		}
		if err != nil {
			return err
		}
		b, err := tx.CreateBucket([]byte("b"))
		if err == nil {
			err = b.Put([]byte("only"), []byte("b"))
		}
		if err != nil {
			return err
		}
		return saveSnapshotAt(tx, 0, time.Unix(100, 0), []string{"a", "b"})
	})
	if err != nil {
		t.Fatal(err)
	}
	// As committed (in the writing transaction an empty value reads as
	// nil, from the pages as empty).
	want := dumpOf(t, s, names...)
	err = s.Update(func(tx *bolt.Tx) error {
		a, b := tx.Bucket([]byte("a")), tx.Bucket([]byte("b"))
		n1 := a.Bucket([]byte("n1"))
		// changed after the snapshot
		if err := a.Put([]byte("k000"), []byte("changed")); err != nil {
			return err
		}
		if err := a.Put([]byte("zz new"), []byte("new")); err != nil {
			return err
		}
		if err := n1.DeleteBucket([]byte("n2")); err != nil {
			return err
		}
		if err := b.Put([]byte("later"), []byte("b")); err != nil {
			return err
		}
		c, err := tx.CreateBucket([]byte("c"))
		if err == nil {
			err = c.Put([]byte("c"), []byte("c"))
		}
		if err == nil {
			err = c.SetSequence(3)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, want
}

// dumpOf dumps the buckets names of s, copied out of the transaction.
func dumpOf(t *testing.T, s *Store, names ...string) *Snapshot {
	t.Helper()
	var got *Snapshot
	err := s.View(func(tx *bolt.Tx) (err error) {
		if got, err = dumpSnapshot(tx, 0, events.ZeroHash, time.Unix(100, 0), names); err != nil {
			return err
		}
		for name, kvs := range got.Buckets {
			got.Buckets[name] = cloneKVs(kvs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// cloneKVs copies kvs' keys and values (a dump's point into the pages
// of its transaction).
func cloneKVs(kvs []KV) []KV {
	out := make([]KV, len(kvs))
	for k, kv := range kvs {
		out[k] = KV{K: bytes.Clone(kv.K), V: bytes.Clone(kv.V), Nested: kv.Nested, Sequence: kv.Sequence, Bucket: kv.Bucket}
		if kv.Nested {
			out[k].Bucket = cloneKVs(kv.Bucket)
		}
	}
	return out
}

// The buckets restored in parts are those of the snapshot, nested
// buckets and sequences included, whatever the size of a part; a bucket
// the snapshot does not hold is left empty, one not named is untouched.
func TestRestoreSnapshotBuckets(t *testing.T) {
	for _, part := range []int{1, 7, 50, 1 << 20} {
		t.Run(fmt.Sprint("part ", part), func(t *testing.T) {
			defer func(p int) { restorePart = p }(restorePart)
			restorePart = part
			s, want := restoreFixture(t)
			before := dumpOf(t, s, "b")
			if err := s.RestoreSnapshotBuckets(context.Background(), 0, []string{"a", "c"}); err != nil {
				t.Fatal(err)
			}
			got := dumpOf(t, s, "a", "b", "c")
			if !reflect.DeepEqual(got.Buckets["a"], want.Buckets["a"]) || got.Sequences["a"] != 7 {
				t.Errorf("a restored: %d pairs (sequence %d), want the snapshot's %d (sequence 7)", len(got.Buckets["a"]), got.Sequences["a"], len(want.Buckets["a"]))
			}
			if len(got.Buckets["c"]) != 0 || got.Sequences["c"] != 0 {
				t.Errorf("c, which the snapshot does not hold: %d pairs, sequence %d; want it empty", len(got.Buckets["c"]), got.Sequences["c"])
			}
			if !reflect.DeepEqual(got.Buckets["b"], before.Buckets["b"]) {
				t.Errorf("b, not named, changed: %d pairs, was %d", len(got.Buckets["b"]), len(before.Buckets["b"]))
			}
		})
	}
}

// countedCtx ends after its Err has been asked n times.
type countedCtx struct {
	context.Context
	n *int
}

func (c countedCtx) Err() error {
	if *c.n--; *c.n < 0 {
		return context.Canceled
	}
	return nil
}

// A restore that ends between two parts leaves the buckets part way;
// the next one, from the start, restores them whole.
func TestRestoreSnapshotBucketsCutShort(t *testing.T) {
	defer func(p int) { restorePart = p }(restorePart)
	restorePart = 10
	s, want := restoreFixture(t)
	n := 4
	err := s.RestoreSnapshotBuckets(countedCtx{context.Background(), &n}, 0, []string{"a"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a restore whose context ended: %v", err)
	}
	if got := dumpOf(t, s, "a"); len(got.Buckets["a"]) == 0 || reflect.DeepEqual(got.Buckets["a"], want.Buckets["a"]) {
		t.Fatalf("cut short after 4 parts of 10: %d pairs in a, want some but not all", len(got.Buckets["a"]))
	}
	if err := s.RestoreSnapshotBuckets(context.Background(), 0, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if got := dumpOf(t, s, "a"); !reflect.DeepEqual(got.Buckets["a"], want.Buckets["a"]) {
		t.Errorf("restored again: %d pairs, not the snapshot's %d", len(got.Buckets["a"]), len(want.Buckets["a"]))
	}
}

// A damaged snapshot writes nothing; a snapshot of the first format
// (JSON) restores too; a missing one is ErrNotFound; the log's buckets
// are refused.
func TestRestoreSnapshotBucketsRefuses(t *testing.T) {
	s, want := restoreFixture(t)
	before := dumpOf(t, s, "a")
	err := s.Update(func(tx *bolt.Tx) error {
		nb := tx.Bucket(bSnapshots).Bucket(seqKey(0))
		data := snapshotData(nb)
		data[len(data)/2] ^= 0xff
		return nb.Put(snapData, data)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RestoreSnapshotBuckets(context.Background(), 0, []string{"a"}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a damaged snapshot: %v, want ErrCorrupt", err)
	}
	if got := dumpOf(t, s, "a"); !reflect.DeepEqual(got.Buckets["a"], before.Buckets["a"]) {
		t.Error("a damaged snapshot changed the bucket")
	}
	err = s.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bSnapshots).Bucket(seqKey(0)).Put(snapData, v1(t, want))
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, names := range [][]string{{"a"}, nil} {
		if err := s.RestoreSnapshotBuckets(context.Background(), 0, names); err != nil {
			t.Fatalf("a snapshot of the first format, %v: %v", names, err)
		}
		if got := dumpOf(t, s, "a"); !reflect.DeepEqual(got.Buckets["a"], want.Buckets["a"]) {
			t.Errorf("restored from the first format, %v: %d pairs, not the snapshot's %d", names, len(got.Buckets["a"]), len(want.Buckets["a"]))
		}
		if err := s.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("a")).Put([]byte("k000"), []byte("changed")) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RestoreSnapshotBuckets(context.Background(), 5, []string{"a"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("no snapshot at 5: %v, want ErrNotFound", err)
	}
	if err := s.RestoreSnapshotBuckets(context.Background(), 0, []string{BucketLog}); err == nil {
		t.Error("restoring the log's bucket was not refused")
	}
}

// LoadSnapshotBuckets is LoadSnapshot with only the buckets asked for,
// from either format.
func TestLoadSnapshotBuckets(t *testing.T) {
	s, want := restoreFixture(t)
	for _, format := range []string{"v2", "v1"} {
		if format == "v1" {
			err := s.Update(func(tx *bolt.Tx) error {
				return tx.Bucket(bSnapshots).Bucket(seqKey(0)).Put(snapData, v1(t, want))
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		whole, err := s.LoadSnapshot(0)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.LoadSnapshotBuckets(0, []string{"a", "missing"})
		if err != nil {
			t.Fatal(err)
		}
		only := *whole
		only.Buckets = map[string][]KV{"a": whole.Buckets["a"]}
		if !reflect.DeepEqual(got, &only) {
			t.Errorf("%s: buckets %d, a %d pairs, sequences %v; want a of %d pairs, sequences %v", format, len(got.Buckets), len(got.Buckets["a"]), got.Sequences, len(only.Buckets["a"]), only.Sequences)
		}
	}
	if _, err := s.LoadSnapshotBuckets(9, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("no snapshot at 9: %v", err)
	}
}

// With no names, every bucket the snapshot holds is replaced (as
// RestoreSnapshotTx does) and the others are left as they are.
func TestRestoreSnapshotBucketsAll(t *testing.T) {
	defer func(p int) { restorePart = p }(restorePart)
	restorePart = 7
	s, want := restoreFixture(t)
	before := dumpOf(t, s, "c")
	if err := s.RestoreSnapshotBuckets(context.Background(), 0, nil); err != nil {
		t.Fatal(err)
	}
	got := dumpOf(t, s, "a", "b", "c")
	for _, name := range []string{"a", "b"} {
		if !reflect.DeepEqual(got.Buckets[name], want.Buckets[name]) || got.Sequences[name] != want.Sequences[name] {
			t.Errorf("%s: %d pairs (sequence %d), want the snapshot's %d (sequence %d)", name, len(got.Buckets[name]), got.Sequences[name], len(want.Buckets[name]), want.Sequences[name])
		}
	}
	if !reflect.DeepEqual(got.Buckets["c"], before.Buckets["c"]) || got.Sequences["c"] != 3 {
		t.Errorf("c, not in the snapshot, changed: %d pairs, sequence %d", len(got.Buckets["c"]), got.Sequences["c"])
	}
}

// RestoreSnapshotInto writes the same buckets into another database.
func TestRestoreSnapshotInto(t *testing.T) {
	defer func(p int) { restorePart = p }(restorePart)
	restorePart = 7
	s, want := restoreFixture(t)
	db, err := bolt.Open(filepath.Join(t.TempDir(), "scratch.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := s.RestoreSnapshotInto(context.Background(), db, 0, []string{"a", "c"}); err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx *bolt.Tx) error {
		got, err := dumpSnapshot(tx, 0, events.ZeroHash, time.Unix(100, 0), []string{"a", "b", "c"})
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(cloneKVs(got.Buckets["a"]), want.Buckets["a"]) || got.Sequences["a"] != 7 {
			t.Errorf("a: %d pairs (sequence %d), want the snapshot's %d", len(got.Buckets["a"]), got.Sequences["a"], len(want.Buckets["a"]))
		}
		if tx.Bucket([]byte("b")) != nil || tx.Bucket([]byte("c")) == nil {
			t.Error("b, not named, was restored, or c, named, was not made")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
