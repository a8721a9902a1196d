package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/store"
	"github.com/jocasta/jocasta/store/storetest"
	bolt "go.etcd.io/bbolt"
)

func TestCheckpoints(t *testing.T) {
	s := storetest.Open(t)
	steps := []struct {
		name     string
		consumer string
		set      uint64
	}{
		{"first write", "inventory", 7},
		{"other consumer", "timeline", 3},
		{"overwrite", "inventory", 42},
		{"back to zero", "timeline", 0},
	}
	want := map[string]uint64{}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			err := s.DB().Update(func(tx *bolt.Tx) error { return store.SetCheckpoint(tx, st.consumer, st.set) })
			if err != nil {
				t.Fatal(err)
			}
			want[st.consumer] = st.set
			s.DB().View(func(tx *bolt.Tx) error {
				for c, w := range want {
					if got := store.Checkpoint(tx, c); got != w {
						t.Errorf("Checkpoint(%q) = %d, want %d", c, got, w)
					}
				}
				if got := store.Checkpoint(tx, "never-set"); got != 0 {
					t.Errorf("unknown consumer: %d", got)
				}
				return nil
			})
		})
	}
	if err := s.DB().Update(func(tx *bolt.Tx) error { return store.SetCheckpoint(tx, "", 1) }); err == nil {
		t.Error("empty consumer name accepted")
	}
}

// fillProjection writes a projection-like bucket with a nested bucket,
// sequences and an empty value.
func fillProjection(tx *bolt.Tx, name string, n int) error {
	b, err := tx.CreateBucketIfNotExists([]byte(name))
	if err != nil {
		return err
	}
	for i := range n {
		if err := b.Put([]byte{byte('a' + i)}, []byte{byte(i)}); err != nil {
			return err
		}
	}
	if err := b.Put([]byte("empty"), []byte{}); err != nil {
		return err
	}
	if err := b.SetSequence(uint64(100 + n)); err != nil {
		return err
	}
	nb, err := b.CreateBucketIfNotExists([]byte("by_mac"))
	if err != nil {
		return err
	}
	if err := nb.SetSequence(9); err != nil {
		return err
	}
	if _, err := nb.CreateBucketIfNotExists([]byte("empty_nested")); err != nil {
		return err
	}
	return nb.Put([]byte("aa:bb"), []byte("dev1"))
}

// dump lists every key of bucket name, nested ones as paths, with
// sequences, for comparing buckets.
func dump(tx *bolt.Tx, name string) map[string]string {
	out := map[string]string{}
	var walk func(prefix string, b *bolt.Bucket)
	walk = func(prefix string, b *bolt.Bucket) {
		out[prefix+"#seq"] = string(rune(b.Sequence()))
		b.ForEach(func(k, v []byte) error {
			if v == nil {
				walk(prefix+"/"+string(k), b.Bucket(k))
			} else {
				out[prefix+"/"+string(k)] = string(v)
			}
			return nil
		})
	}
	if b := tx.Bucket([]byte(name)); b != nil {
		walk(name, b)
	}
	return out
}

func TestSnapshotRoundTrip(t *testing.T) {
	s := storetest.Open(t)
	stored := appendN(t, s, 3, time.Now())
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.FixedZone("X", 3600))
	var before map[string]string
	err := s.DB().Update(func(tx *bolt.Tx) error {
		if err := fillProjection(tx, "inventory", 5); err != nil {
			return err
		}
		if err := store.SetCheckpoint(tx, "inventory", 3); err != nil {
			return err
		}
		before = dump(tx, "inventory")
		return store.SaveSnapshotTx(tx, 3, at, []string{"inventory", "missing_bucket", "inventory"})
	})
	if err != nil {
		t.Fatal(err)
	}
	infos, err := s.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Seq != 3 || infos[0].Hash != stored[2].Hash || !infos[0].Time.Equal(at) || infos[0].Bytes == 0 {
		t.Fatalf("Snapshots() = %+v", infos)
	}
	snap, err := s.LoadSnapshot(3)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Seq != 3 || snap.Hash != stored[2].Hash || snap.Time.Location() != time.UTC {
		t.Errorf("snapshot header %d %s %v", snap.Seq, snap.Hash, snap.Time)
	}

	// Change the projection, then restore.
	err = s.DB().Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket([]byte("inventory")); err != nil {
			return err
		}
		if err := fillProjection(tx, "inventory", 9); err != nil {
			return err
		}
		b, _ := tx.CreateBucket([]byte("missing_bucket"))
		return b.Put([]byte("k"), []byte("v"))
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.DB().Update(func(tx *bolt.Tx) error { return store.RestoreSnapshotTx(tx, snap) })
	if err != nil {
		t.Fatal(err)
	}
	s.DB().View(func(tx *bolt.Tx) error {
		if diff := cmp.Diff(before, dump(tx, "inventory")); diff != "" {
			t.Errorf("restored bucket (-want +got):\n%s", diff)
		}
		if n := tx.Bucket([]byte("missing_bucket")).Stats().KeyN; n != 0 {
			t.Errorf("bucket missing at save has %d keys after restore, want 0", n)
		}
		return nil
	})

	for _, c := range []struct {
		name string
		save func(tx *bolt.Tx) error
	}{
		{"seq beyond head", func(tx *bolt.Tx) error { return store.SaveSnapshotTx(tx, 4, at, nil) }},
		{"the log bucket", func(tx *bolt.Tx) error { return store.SaveSnapshotTx(tx, 1, at, []string{store.BucketLog}) }},
		{"the meta bucket", func(tx *bolt.Tx) error { return store.SaveSnapshotTx(tx, 1, at, []string{store.BucketMeta}) }},
	} {
		t.Run("save refuses "+c.name, func(t *testing.T) {
			if err := s.DB().Update(c.save); err == nil {
				t.Error("accepted")
			}
		})
	}
	t.Run("restore refuses the log bucket", func(t *testing.T) {
		bad := &store.Snapshot{Seq: 1, Hash: events.ZeroHash, Buckets: map[string][]store.KV{store.BucketLog: nil}}
		if err := s.DB().Update(func(tx *bolt.Tx) error { return store.RestoreSnapshotTx(tx, bad) }); err == nil {
			t.Error("accepted")
		}
	})
	if _, err := s.LoadSnapshot(2); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LoadSnapshot(2) err = %v, want ErrNotFound", err)
	}
}

func TestDeleteSnapshotsBefore(t *testing.T) {
	s := storetest.Open(t)
	appendN(t, s, 5, time.Now())
	for _, seq := range []uint64{0, 2, 4} {
		if err := s.DB().Update(func(tx *bolt.Tx) error { return store.SaveSnapshotTx(tx, seq, time.Now(), nil) }); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		before uint64
		want   []uint64
	}{
		{1, []uint64{2, 4}},
		{3, []uint64{4}},
		{100, []uint64{4}}, // the newest is always kept
	} {
		if err := s.DeleteSnapshotsBefore(c.before); err != nil {
			t.Fatal(err)
		}
		infos, err := s.Snapshots()
		if err != nil {
			t.Fatal(err)
		}
		var got []uint64
		for _, i := range infos {
			got = append(got, i.Seq)
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("after DeleteSnapshotsBefore(%d) (-want +got):\n%s", c.before, diff)
		}
	}
}

func TestCompact(t *testing.T) {
	s := storetest.OpenWith(t, store.Options{NoSync: true})
	const n = 9000 // three compaction chunks
	var all []events.Envelope
	for i := 0; i < n; i += 500 {
		batch := make([]events.Envelope, 500)
		for j := range batch {
			batch[j] = tokenEvent(t, "t")
		}
		got, err := s.Append(t.Context(), batch...)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, got...)
	}
	snapAt := func(seq uint64) {
		t.Helper()
		if err := s.DB().Update(func(tx *bolt.Tx) error { return store.SaveSnapshotTx(tx, seq, time.Now(), nil) }); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := s.Compact(t.Context(), 100); !errors.Is(err, store.ErrNoSnapshot) {
		t.Fatalf("compact without snapshot: err = %v, want ErrNoSnapshot", err)
	}
	snapAt(50)
	if _, err := s.Compact(t.Context(), 100); !errors.Is(err, store.ErrNoSnapshot) {
		t.Fatalf("compact past the snapshot: err = %v, want ErrNoSnapshot", err)
	}
	snapAt(8500)
	removed, err := s.Compact(t.Context(), 8200)
	if err != nil {
		t.Fatal(err)
	}
	if removed != 8200 || s.First() != 8201 || s.Head() != n {
		t.Fatalf("removed %d, first %d, head %d; want 8200, 8201, %d", removed, s.First(), s.Head(), n)
	}
	if removed, err := s.Compact(t.Context(), 8200); err != nil || removed != 0 {
		t.Fatalf("second compaction: removed %d, %v", removed, err)
	}
	got, err := s.Read(1, 2)
	if err != nil || len(got) != 2 || got[0].Seq != 8201 {
		t.Fatalf("Read(1) after compaction: %v %v, want from 8201", got, err)
	}
	if _, err := s.Get(5); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(5) after compaction: %v", err)
	}
	rep, err := s.Verify(t.Context(), nil)
	want := store.VerifyReport{First: 8201, Head: n, Checked: n - 8200, OK: true}
	if err != nil || rep != want {
		t.Fatalf("verify after compaction: %+v %v, want %+v", rep, err, want)
	}
	more, err := s.Append(t.Context(), tokenEvent(t, "after"))
	if err != nil {
		t.Fatal(err)
	}
	if more[0].Seq != n+1 || more[0].PrevHash != all[n-1].Hash {
		t.Errorf("append after compaction: seq %d prev %s", more[0].Seq, more[0].PrevHash)
	}
	// Compact everything, then reopen: the anchor carries the chain.
	snapAt(n + 1)
	if _, err := s.Compact(t.Context(), n+1000); err != nil {
		t.Fatal(err)
	}
	if s.First() != n+2 || s.Head() != n+1 {
		t.Fatalf("after full compaction first %d head %d", s.First(), s.Head())
	}
	path := s.Path()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.First() != n+2 || s2.Head() != n+1 {
		t.Fatalf("reopened: first %d head %d", s2.First(), s2.Head())
	}
	last, err := s2.Append(t.Context(), tokenEvent(t, "last"))
	if err != nil {
		t.Fatal(err)
	}
	if last[0].PrevHash != more[0].Hash {
		t.Error("append after full compaction does not chain to the anchor")
	}
	if rep, err := s2.Verify(t.Context(), nil); err != nil || !rep.OK || rep.Checked != 1 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

func TestCopyLog(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	src := storetest.Open(t)
	stored := appendN(t, src, 10, base) // event i at base + i minutes
	if err := src.DB().Update(func(tx *bolt.Tx) error {
		if err := fillProjection(tx, "inventory", 2); err != nil {
			return err
		}
		return store.SaveSnapshotTx(tx, 3, base, []string{"inventory"})
	}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		compact   uint64
		until     time.Time
		wantFirst uint64
		wantHead  uint64
	}{
		{"everything", 0, time.Time{}, 1, 10},
		{"until the 6th minute", 0, base.Add(5 * time.Minute), 1, 6},
		{"until before the first", 0, base.Add(-time.Hour), 1, 0},
		{"after compaction", 3, base.Add(7 * time.Minute), 4, 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.compact > 0 {
				if _, err := src.Compact(t.Context(), c.compact); err != nil {
					t.Fatal(err)
				}
			}
			dst := storetest.Open(t)
			var hooked uint64
			dst.OnCommit(func(h uint64) { hooked = h })
			n, err := src.CopyLog(dst, c.until)
			if err != nil {
				t.Fatal(err)
			}
			if wantN := c.wantHead - min(c.wantHead, c.wantFirst-1); n != wantN {
				t.Errorf("copied %d, want %d", n, wantN)
			}
			if dst.First() != c.wantFirst || dst.Head() != c.wantHead {
				t.Errorf("dst first %d head %d, want %d %d", dst.First(), dst.Head(), c.wantFirst, c.wantHead)
			}
			if n > 0 && hooked != c.wantHead {
				t.Errorf("dst hooks saw head %d", hooked)
			}
			if c.wantHead >= c.wantFirst {
				got, err := dst.Read(0, 100)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(stored[c.wantFirst-1:c.wantHead], got); diff != "" {
					t.Errorf("copied events (-want +got):\n%s", diff)
				}
			}
			rep, err := dst.Verify(t.Context(), nil)
			if err != nil || !rep.OK {
				t.Fatalf("dst verify: %+v %v", rep, err)
			}
			next, err := dst.Append(t.Context(), tokenEvent(t, "next"))
			if err != nil {
				t.Fatal(err)
			}
			if next[0].Seq != c.wantHead+1 {
				t.Errorf("dst appended seq %d, want %d", next[0].Seq, c.wantHead+1)
			}
			if c.compact > 0 {
				if _, err := dst.LoadSnapshot(3); err != nil {
					t.Errorf("snapshot covering the anchor not copied: %v", err)
				}
			}
			if _, err := src.CopyLog(dst, time.Time{}); err == nil {
				t.Error("CopyLog into a non-empty store succeeded")
			}
		})
	}
	// Stored bytes are identical.
	dst := storetest.Open(t)
	if _, err := src.CopyLog(dst, time.Time{}); err != nil {
		t.Fatal(err)
	}
	raw := func(s *store.Store) map[string]string {
		m := map[string]string{}
		s.DB().View(func(tx *bolt.Tx) error {
			return tx.Bucket([]byte(store.BucketLog)).ForEach(func(k, v []byte) error { m[string(k)] = string(v); return nil })
		})
		return m
	}
	if diff := cmp.Diff(raw(src), raw(dst)); diff != "" {
		t.Errorf("stored bytes differ (-src +dst):\n%s", diff)
	}
	if _, err := src.CopyLog(src, time.Time{}); err == nil {
		t.Error("CopyLog into itself succeeded")
	}
}

// TestSaveSnapshotOf covers snapshots of an event the caller read from a
// log: beyond the head (replay copies the log while applying it) the
// event's hash is taken; within it, the hash must be the logged one.
func TestSaveSnapshotOf(t *testing.T) {
	s := storetest.Open(t)
	stored := appendN(t, s, 3, time.Now())
	ahead := stored[2]
	ahead.Seq, ahead.Hash = 9, strings.Repeat("ab", 32)
	wrong := stored[1]
	wrong.Hash = strings.Repeat("cd", 32)
	noHash := stored[0]
	noHash.Hash = ""
	for _, c := range []struct {
		name string
		ev   events.Envelope
		ok   bool
	}{
		{"a logged event", stored[1], true},
		{"an event beyond the head", ahead, true},
		{"a logged seq with another hash", wrong, false},
		{"an event without a hash", noHash, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := s.DB().Update(func(tx *bolt.Tx) error {
				return store.SaveSnapshotOfTx(tx, c.ev, []string{"inventory"})
			})
			if c.ok != (err == nil) {
				t.Fatalf("err = %v, want ok = %v", err, c.ok)
			}
			if !c.ok {
				return
			}
			snap, err := s.LoadSnapshot(c.ev.Seq)
			if err != nil {
				t.Fatal(err)
			}
			if snap.Hash != c.ev.Hash || !snap.Time.Equal(c.ev.Time) {
				t.Errorf("snapshot %d: hash %s time %v, want %s %v", c.ev.Seq, snap.Hash, snap.Time, c.ev.Hash, c.ev.Time)
			}
		})
	}
	if err := s.DB().View(func(tx *bolt.Tx) error { return store.SaveSnapshotOfTx(tx, stored[0], nil) }); err == nil {
		t.Error("saved in a read-only transaction")
	}
}
