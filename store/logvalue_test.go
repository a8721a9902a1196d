package store_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/store"
)

// rawLog reads the stored log values and the out-of-line parts' keys of
// an open store's file.
func rawLog(t *testing.T, s *store.Store) (vals map[uint64][]byte, parts map[uint64]int, schema uint64) {
	t.Helper()
	vals, parts = map[uint64][]byte{}, map[uint64]int{}
	err := s.DB().View(func(tx *bolt.Tx) error {
		err := tx.Bucket([]byte(store.BucketLog)).ForEach(func(k, v []byte) error {
			vals[binary.BigEndian.Uint64(k)] = bytes.Clone(v)
			return nil
		})
		if err != nil {
			return err
		}
		if pb := tx.Bucket([]byte(store.BucketLogParts)); pb != nil {
			if err := pb.ForEach(func(k, _ []byte) error {
				parts[binary.BigEndian.Uint64(k[:8])]++
				return nil
			}); err != nil {
				return err
			}
		}
		schema = binary.BigEndian.Uint64(tx.Bucket([]byte(store.BucketMeta)).Get([]byte("schema")))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return vals, parts, schema
}

// openTemp opens a store in a new temporary directory, closed when the
// test ends.
func openTemp(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(filepath.Join(t.TempDir(), "j.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openWithLargeSecond opens a new store of three events, the second
// stored out of line.
func openWithLargeSecond(t *testing.T) *store.Store {
	t.Helper()
	s := openTemp(t)
	for i := range 3 {
		e := sweepEvent(t, 2, time.Now())
		if i == 1 {
			e = largeEvent(t, i, 40_000)
		}
		if _, err := s.Append(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// sameEvents fails unless got are want, byte for byte where it counts.
func sameEvents(t *testing.T, got, want []events.Envelope) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].Seq != want[i].Seq || got[i].Hash != want[i].Hash || !bytes.Equal(got[i].Payload, want[i].Payload) {
			t.Fatalf("event %d reads back different (seq %d, %d payload bytes)", i, got[i].Seq, len(got[i].Payload))
		}
	}
}

// TestOutOfLineValues: large events (a flow window's) are stored out of
// line, a stub in the log and parts in BucketLogParts, and every way the
// store reads the log gets them back whole: Read, Get, a reopen whose
// head is one, Verify, Stats, CopyLog and Compact (which deletes their
// parts). The file says schema 2 once it holds one.
func TestOutOfLineValues(t *testing.T) {
	const rows = 40_000 // about 800 KB of payload, out of line
	path := filepath.Join(t.TempDir(), "j.db")
	s, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	if _, _, schema := rawLog(t, s); schema != 1 {
		t.Fatalf("a new file has schema %d, want 1", schema)
	}
	at := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	var stored []events.Envelope
	for i, large := range []bool{false, true, false, true, true, false, true} {
		e := sweepEvent(t, 2, at.Add(time.Duration(i)*time.Minute))
		if large {
			e = largeEvent(t, i, rows)
		}
		got, err := s.Append(t.Context(), e)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, got...)
	}
	vals, parts, schema := rawLog(t, s)
	if schema != 2 {
		t.Fatalf("schema %d after out-of-line values, want 2", schema)
	}
	for _, seq := range []uint64{2, 4, 5, 7} {
		if len(vals[seq]) != 9 || vals[seq][0] != 0 || parts[seq] < rows*15/5000 {
			t.Fatalf("seq %d: stored value of %d bytes, %d parts: not out of line", seq, len(vals[seq]), parts[seq])
		}
	}
	for _, seq := range []uint64{1, 3, 6} {
		if vals[seq][0] != '{' || parts[seq] != 0 {
			t.Fatalf("seq %d: a small event not stored in place", seq)
		}
	}
	evs, err := s.Read(1, 100)
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, evs, stored)
	for _, want := range stored {
		got, err := s.Get(want.Seq)
		if err != nil {
			t.Fatal(err)
		}
		sameEvents(t, []events.Envelope{got}, []events.Envelope{want})
	}
	if rep, err := s.Verify(t.Context(), nil); err != nil || !rep.OK || rep.Checked != uint64(len(stored)) {
		t.Fatalf("verify: %v, %+v", err, rep)
	}
	st, err := s.Stats(t.Context())
	if err != nil || st.Events != len(stored) {
		t.Fatalf("stats: %v, %d events", err, st.Events)
	}

	// Reopened with an out-of-line head.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = store.Open(path, store.Options{NoSync: true}); err != nil {
		t.Fatalf("reopen with an out-of-line head: %v", err)
	}

	// Copied event by event into a new file, in transactions of about
	// one large event each.
	defer store.SetCopyByteBounds(1<<20, 1<<20)()
	dst, err := store.Open(filepath.Join(t.TempDir(), "copy.db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if n, err := s.CopyLog(dst, time.Time{}); err != nil || n != uint64(len(stored)) {
		t.Fatalf("copy: %d events, %v", n, err)
	}
	if evs, err = dst.Read(1, 100); err != nil {
		t.Fatal(err)
	}
	sameEvents(t, evs, stored)
	if _, parts, _ := rawLog(t, dst); parts[7] == 0 {
		t.Fatal("the copy holds seq 7 in place, not out of line")
	}
	if rep, err := dst.Verify(t.Context(), nil); err != nil || !rep.OK || rep.Checked != uint64(len(stored)) {
		t.Fatalf("verify the copy: %v, %+v", err, rep)
	}

	// Compacted through seq 4: the parts of 2 and 4 go with their stubs.
	if err := s.DB().Update(func(tx *bolt.Tx) error { return store.SaveSnapshotTx(tx, 4, time.Now(), nil) }); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Compact(t.Context(), 4); err != nil || n != 4 {
		t.Fatalf("compact: %d removed, %v", n, err)
	}
	if _, parts, _ := rawLog(t, s); parts[2] != 0 || parts[4] != 0 || parts[5] == 0 || parts[7] == 0 {
		t.Fatalf("parts after compacting through 4: %v", parts)
	}
	if evs, err = s.Read(5, 100); err != nil {
		t.Fatal(err)
	}
	sameEvents(t, evs, stored[4:])
	if rep, err := s.Verify(t.Context(), nil); err != nil || !rep.OK || rep.Checked != 3 {
		t.Fatalf("verify after compacting: %v, %+v", err, rep)
	}
}

// TestOutOfLineDamage: a missing part of an out-of-line value is damage
// that Verify names and a read refuses, not a shorter event.
func TestOutOfLineDamage(t *testing.T) {
	s := openWithLargeSecond(t)
	err := s.DB().Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(store.BucketLogParts)).Delete(append(key(2), 0, 0, 0, 5))
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(1, 10); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("read with a part missing: %v, want ErrCorrupt", err)
	}
	if _, err := s.Get(2); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("get with a part missing: %v, want ErrCorrupt", err)
	}
	rep, err := s.Verify(t.Context(), nil)
	if err != nil || rep.OK || rep.FirstBad != 2 {
		t.Fatalf("verify with a part missing: %v, %+v (want seq 2 bad)", err, rep)
	}
	t.Logf("verify: %s", rep.Reason)
}

// TestStrayParts: parts that no stub in the log points to (under an
// event stored in place, beyond the head, below the first event) are
// reported by Verify with their seq; reading the events is unaffected.
func TestStrayParts(t *testing.T) {
	for _, tc := range []struct {
		name string
		seq  uint64
	}{
		{"under an event stored in place", 3},
		{"beyond the head", 99},
		{"below the first event", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openWithLargeSecond(t)
			if rep, err := s.Verify(t.Context(), nil); err != nil || !rep.OK {
				t.Fatalf("verify before: %v, %+v", err, rep)
			}
			err := s.DB().Update(func(tx *bolt.Tx) error {
				return tx.Bucket([]byte(store.BucketLogParts)).Put(append(key(tc.seq), 0, 0, 0, 0), []byte("added"))
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Read(1, 10); err != nil {
				t.Fatalf("read beside a stray part: %v", err)
			}
			rep, err := s.Verify(t.Context(), nil)
			if err != nil || rep.OK || rep.FirstBad != tc.seq || !strings.Contains(rep.Reason, "does not store out of line") {
				t.Fatalf("verify with a stray part under seq %d: %v, %+v", tc.seq, err, rep)
			}
		})
	}
}

// TestInPlaceLargeValuesStillRead: a file written before out-of-line
// values (schema 1, a window's event stored in the log itself) reads,
// verifies and appends as before.
func TestInPlaceLargeValuesStillRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.db")
	s, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	var stored []events.Envelope
	for i := range 3 {
		e := sweepEvent(t, 2, time.Now())
		if i == 1 {
			e = largeEvent(t, i, 40_000)
		}
		got, err := s.Append(t.Context(), e)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, got...)
	}
	s.Close()
	// The layout of the earlier build: the value in place, no parts.
	raw, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = raw.Update(func(tx *bolt.Tx) error {
		var v bytes.Buffer
		if err := json.NewEncoder(&v).Encode(stored[1]); err != nil {
			return err
		}
		if err := tx.Bucket([]byte(store.BucketLog)).Put(key(2), bytes.TrimSuffix(v.Bytes(), []byte("\n"))); err != nil {
			return err
		}
		if err := tx.DeleteBucket([]byte(store.BucketLogParts)); err != nil {
			return err
		}
		return tx.Bucket([]byte(store.BucketMeta)).Put([]byte("schema"), key(1))
	})
	raw.Close()
	if err != nil {
		t.Fatal(err)
	}
	if s, err = store.Open(path, store.Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if vals, _, schema := rawLog(t, s); schema != 1 || vals[2][0] != '{' {
		t.Fatalf("not the earlier layout: schema %d", schema)
	}
	evs, err := s.Read(1, 10)
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, evs, stored)
	if rep, err := s.Verify(t.Context(), nil); err != nil || !rep.OK || rep.Checked != 3 {
		t.Fatalf("verify: %v, %+v", err, rep)
	}
	got, err := s.Append(t.Context(), largeEvent(t, 9, 40_000))
	if err != nil {
		t.Fatal(err)
	}
	if _, parts, schema := rawLog(t, s); schema != 2 || parts[got[0].Seq] == 0 {
		t.Fatalf("after a large append: schema %d, parts %v", schema, parts)
	}
}

// TestOutOfLineStubClaimingTooMuch: a damaged stub that claims a
// gigabyte, over parts that hold a few kilobytes, is damage, and
// reading it does not allocate the gigabyte.
func TestOutOfLineStubClaimingTooMuch(t *testing.T) {
	s := openTemp(t)
	if _, err := s.Append(t.Context(), largeEvent(t, 1, 40_000)); err != nil {
		t.Fatal(err)
	}
	err := s.DB().Update(func(tx *bolt.Tx) error {
		stub := make([]byte, 9)
		binary.BigEndian.PutUint64(stub[1:], 1<<30)
		return tx.Bucket([]byte(store.BucketLog)).Put(key(1), stub)
	})
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = s.Get(1)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("get of a stub claiming 1 GiB: %v, want ErrCorrupt", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Fatalf("reading a stub that claims 1 GiB allocated %d bytes", got)
	}
}

// TestStatsOfOutOfLineValues: log stats counts an out-of-line value at
// its whole length, by kind and day, from its first part: a part after
// the first missing is Verify's to find, not Stats'; the first missing
// is damage Stats reports. A value in another layout than the store's
// (spaces: read whole, with encoding/json) counts the same.
func TestStatsOfOutOfLineValues(t *testing.T) {
	s := openWithLargeSecond(t)
	vals, _, _ := rawLog(t, s)
	var want int64
	for seq, v := range vals {
		n := int64(len(v))
		if len(v) == 9 && v[0] == 0 {
			n = int64(binary.BigEndian.Uint64(v[1:]))
		}
		want += 8 + n
		if seq == 2 && n < 256<<10 {
			t.Fatalf("seq 2 stored in place (%d bytes)", n)
		}
	}
	check := func(what string, bytes int64) {
		t.Helper()
		st, err := s.Stats(t.Context())
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		byKind := map[string]store.KindStats{}
		for _, k := range st.Kinds {
			byKind[k.Kind] = k
		}
		if st.Events != 3 || st.Bytes != bytes || byKind[events.KindTrafficRecorded].Events != 1 ||
			byKind[events.KindTrafficRecorded].Bytes != 8+int64(binary.BigEndian.Uint64(vals[2][1:])) ||
			len(st.Days) != 1 || st.Days[0].Bytes != bytes {
			t.Fatalf("%s: stats %+v, want %d bytes, the window's under %s", what, st, bytes, events.KindTrafficRecorded)
		}
	}
	check("sound", want)

	// The first event written with a space after its opening brace.
	spaced := append([]byte("{ "), vals[1][1:]...)
	if err := s.DB().Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte(store.BucketLog)).Put(key(1), spaced) }); err != nil {
		t.Fatal(err)
	}
	want += int64(len(spaced) - len(vals[1]))
	check("a value in another layout", want)

	parts := changeParts(t, s, func(pb *bolt.Bucket) error { return pb.Delete(append(key(2), 0, 0, 0, 5)) })
	check(fmt.Sprintf("part 5 of %d missing", parts), want)
	changeParts(t, s, func(pb *bolt.Bucket) error { return pb.Delete(append(key(2), 0, 0, 0, 0)) })
	if _, err := s.Stats(t.Context()); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("stats with part 0 missing: %v, want ErrCorrupt", err)
	}
}

// changeParts runs fn on the store's parts bucket in a write transaction and
// returns how many parts it held before.
func changeParts(t *testing.T, s *store.Store, fn func(pb *bolt.Bucket) error) (parts int) {
	t.Helper()
	err := s.DB().Update(func(tx *bolt.Tx) error {
		pb := tx.Bucket([]byte(store.BucketLogParts))
		parts = pb.Stats().KeyN
		return fn(pb)
	})
	if err != nil {
		t.Fatal(err)
	}
	return parts
}

// TestSpan: how many events fit a number of stored bytes, an
// out-of-line value counted at its whole length, at least one.
func TestSpan(t *testing.T) {
	s := openWithLargeSecond(t)
	vals, _, _ := rawLog(t, s)
	one, two := int64(len(vals[1])), int64(binary.BigEndian.Uint64(vals[2][1:]))
	for _, c := range []struct {
		from  uint64
		most  int
		bytes int64
		want  int
	}{
		{1, 10, 1 << 30, 3},
		{1, 2, 1 << 30, 2},
		{1, 10, one + two, 2},
		{1, 10, one + two - 1, 1},
		{1, 10, 1, 1},
		{2, 10, 1, 1},
		{3, 10, 1 << 30, 1},
		{4, 10, 1 << 30, 0},
	} {
		if n, err := s.Span(c.from, c.most, c.bytes); err != nil || n != c.want {
			t.Errorf("Span(%d, %d, %d) = %d, %v; want %d", c.from, c.most, c.bytes, n, err, c.want)
		}
	}
	var seqs []uint64
	if err := s.Scan(t.Context(), 1, func(e events.Envelope) error { seqs = append(seqs, e.Seq); return nil }); err != nil || !slices.Equal(seqs, []uint64{1, 2, 3}) {
		t.Fatalf("scan: %v, %v", seqs, err)
	}
}

// TestReadersChunkByBytes: Verify reads the log in read transactions of
// at most ChunkBytes (but for one value larger), not of a thousand flow
// windows: each chunk reports its progress. ReadChunk stops at
// ChunkBytes and says more follows; Scan, in such chunks, reads all.
func TestReadersChunkByBytes(t *testing.T) {
	s := openTemp(t)
	const each = 40_000 // about 800 KB
	var appended int
	for i := 0; int64(i)*800_000 < 2*store.ChunkBytes; i++ {
		if _, err := s.Append(t.Context(), largeEvent(t, i, each)); err != nil {
			t.Fatal(err)
		}
		appended++
	}
	var calls []uint64
	rep, err := s.Verify(t.Context(), func(n uint64) { calls = append(calls, n) })
	if err != nil || !rep.OK || rep.Checked != uint64(appended) {
		t.Fatalf("verify: %v, %+v", err, rep)
	}
	// Two chunks of ChunkBytes and the rest; the last call comes when
	// the end is found.
	if len(calls) < 3 || calls[0] >= uint64(appended)/2+1 {
		t.Fatalf("progress after each chunk: %v of %d events", calls, appended)
	}

	vals, _, _ := rawLog(t, s)
	evs, more, err := s.ReadChunk(nil, 1, 1000)
	var stored int64
	for _, e := range evs {
		stored += int64(binary.BigEndian.Uint64(vals[e.Seq][1:]))
	}
	if err != nil || !more || len(evs) == 0 || stored > store.ChunkBytes || len(evs) >= appended/2+1 {
		t.Fatalf("ReadChunk from 1: %d events of %d bytes stored, more %v, %v", len(evs), stored, more, err)
	}
	if evs, more, err = s.ReadChunk(nil, uint64(appended), 1000); err != nil || more || len(evs) != 1 {
		t.Fatalf("ReadChunk of the last event: %d events, more %v, %v", len(evs), more, err)
	}
	var scanned int
	if err := s.Scan(t.Context(), 1, func(events.Envelope) error { scanned++; return nil }); err != nil || scanned != appended {
		t.Fatalf("scan: %d of %d events, %v", scanned, appended, err)
	}
}
