package store_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/store"
	"github.com/jocasta/jocasta/store/storetest"
)

// TestReleaseMapped reads a 16 MB database through bbolt's mapping, then
// releases it: the process's resident pages of the file drop, and every
// value reads back the same afterwards (from the page cache).
func TestReleaseMapped(t *testing.T) {
	const n, size = 4096, 4000
	val := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, size) }
	s, path := filledStore(t, n, val)
	readAll := func() {
		t.Helper()
		if err := s.DB().View(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("side"))
			for i := range n {
				if !bytes.Equal(b.Get([]byte(fmt.Sprintf("%08d", i))), val(i)) {
					return fmt.Errorf("value %d differs", i)
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	readAll()
	before := storetest.MappedRss(t, path)
	if before < n*size/2 {
		t.Fatalf("only %d bytes of the file resident after reading %d bytes: the test does not see the mapping", before, n*size)
	}
	covered, err := s.ReleaseMapped()
	if err != nil {
		t.Fatal(err)
	}
	if covered < n*size {
		t.Fatalf("ReleaseMapped covered %d bytes, want at least the %d written", covered, n*size)
	}
	if after := storetest.MappedRss(t, path); after > before/8 {
		t.Fatalf("resident pages of the file: %d bytes before, %d after the release", before, after)
	}
	readAll()
	if again := storetest.MappedRss(t, path); again < n*size/2 {
		t.Fatalf("reading again mapped only %d bytes back", again)
	}
}

// TestReleaseMappedTx: a read that releases the mapped pages as it walks
// (inside its own transaction) reads every value right, and the file's
// resident pages at its end are about what it read since the last
// release, not the whole file.
func TestReleaseMappedTx(t *testing.T) {
	const n, size, every = 4096, 4000, 256
	val := func(i int) []byte { return bytes.Repeat([]byte{byte(i * 7)}, size) }
	s, path := filledStore(t, n, val)
	if _, err := s.ReleaseMapped(); err != nil {
		t.Fatal(err)
	}
	var resident int64
	err := s.DB().View(func(tx *bolt.Tx) error {
		c := tx.Bucket([]byte("side")).Cursor()
		i := 0
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if !bytes.Equal(v, val(i)) {
				return fmt.Errorf("value %d differs after a release", i)
			}
			if i++; i%every == 0 {
				if err := store.ReleaseMappedTx(tx); err != nil {
					return err
				}
			}
		}
		if i != n {
			return fmt.Errorf("walked %d values of %d", i, n)
		}
		resident = storetest.MappedRss(t, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if resident > n*size/4 {
		t.Fatalf("%d bytes of the %d-byte file resident at the walk's end, releasing every %d values", resident, n*size, every)
	}
}

// filledStore opens a store in a temporary directory (closed when the
// test ends) with n values val(i) under keys %08d in a bucket "side",
// and returns it with its file's path.
func filledStore(t *testing.T, n int, val func(int) []byte) (*store.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "j.db")
	s, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("side"))
		if err != nil {
			return err
		}
		for i := range n {
			if err := b.Put([]byte(fmt.Sprintf("%08d", i)), val(i)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return s, path
}

// TestNoRemapAsTheFileGrows: on 64-bit systems the file is mapped 1 GiB
// at open, so writes that grow it far past bbolt's first mappings (which
// double from 32 KiB) leave the mapping where it was: a remap inside a
// write copies the transaction's keys and values onto the heap first.
func TestNoRemapAsTheFileGrows(t *testing.T) {
	if strconv.IntSize != 64 {
		t.Skip("32-bit: bbolt's own doubling of the mapping")
	}
	s, _ := filledStore(t, 1, func(int) []byte { return []byte("x") })
	at := s.DB().Info().Data
	val := bytes.Repeat([]byte{7}, 4000)
	for round := range 8 { // 8 transactions of 2 MB
		if err := s.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("side"))
			for i := range 500 {
				if err := b.Put([]byte(fmt.Sprintf("%02d%06d", round, i)), val); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if now := s.DB().Info().Data; now != at {
		t.Fatalf("the mapping moved from %#x to %#x as the file grew to 16 MB: remapped", at, now)
	}
}

// largeEvent is storetest.FlowWindow of n rows made from i, now.
func largeEvent(t testing.TB, i, n int) events.Envelope {
	return storetest.FlowWindow(t, i, n, time.Time{})
}

// TestLargeEventsLeaveNoMappedPages: a flow window's event (megabytes)
// leaves none of its pages mapped in the process, neither where it or
// an event after it is appended nor where it is read (the envelope is a
// copy; the page cache's large folios map up to 2 MiB around what a
// read touches). Each event would otherwise keep megabytes of
// the file in serve's resident set until the next release.
func TestLargeEventsLeaveNoMappedPages(t *testing.T) {
	const rows = 120_000 // about 2.4 MB of payload
	path := filepath.Join(t.TempDir(), "j.db")
	s, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var stored []events.Envelope
	for i := range 4 {
		got, err := s.Append(t.Context(), largeEvent(t, i, rows))
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, got...)
		if rss := storetest.MappedRss(t, path); rss > 1<<20 {
			t.Fatalf("%d bytes of the file mapped after appending large event %d", rss, i+1)
		}
	}
	// A small event after them: its commit writes the leaf it shares
	// with the last large ones again.
	got, err := s.Append(t.Context(), sweepEvent(t, 2, time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	stored = append(stored, got...)
	if rss := storetest.MappedRss(t, path); rss > 1<<20 {
		t.Fatalf("%d bytes of the file mapped after appending a small event beside large ones", rss)
	}
	evs, err := s.Read(1, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != len(stored) {
		t.Fatalf("read %d events, appended %d", len(evs), len(stored))
	}
	for i, e := range evs {
		if i < 4 && len(e.Payload) < rows*15 || !bytes.Equal(e.Payload, stored[i].Payload) || e.Hash != stored[i].Hash {
			t.Fatalf("event %d reads back different (%d payload bytes)", i+1, len(e.Payload))
		}
	}
	if rss := storetest.MappedRss(t, path); rss > 1<<20 {
		t.Fatalf("%d bytes of the file mapped after reading %d events, 4 of them large", rss, len(evs))
	}
	if rep, err := s.Verify(t.Context(), nil); err != nil {
		t.Fatalf("verify: %v (%+v)", err, rep)
	}
}
