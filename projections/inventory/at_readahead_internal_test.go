package inventory

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/projections/history"
)

// The read-ahead of a list visits every device of the history rows once,
// whatever part of the id space it falls in (ids of another form
// included), and stops when its context ends.
func TestReadAheadVisitsEveryDevice(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "h.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	ids := []string{"a-before-every-part", "d", "d2", "dzzzz", "e-after-every-part"}
	for k := range 500 {
		ids = append(ids, deviceID(fmt.Sprint("key ", k), 0))
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte(bucketHistory))
		if err != nil {
			return err
		}
		for n, id := range ids {
			for r := range 3 { // rows before, at and after the instants read
				if err := b.Put(histKey(id, t0.Add(time.Duration(r)*time.Hour), uint64(n*3+r)), []byte(`{"id":"`+id+`"}`)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	inv := &Inventory{}
	for _, ts := range [][]time.Time{
		{t0.Add(90 * time.Minute)},
		{t0.Add(-time.Hour), t0.Add(5 * time.Hour)},
	} {
		if got := runReadAhead(context.Background(), db, ts)(); got != len(ids) {
			t.Errorf("read-ahead at %v visited %d devices, want %d", ts, got, len(ids))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := inv.startReadAhead(ctx, db, []time.Time{t0})(); got >= len(ids) {
		t.Errorf("a read-ahead with an ended context visited %d devices, want fewer than %d", got, len(ids))
	}
	// A context that ends during the walk stops it at its next look (every
	// 64 devices).
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucketHistory))
		if got := (&histReader{b: b, c: b.Cursor()}).touchRange(ctx, nil, nil, []time.Time{t0}); got != 63 {
			t.Errorf("a walk whose context ended visited %d devices, want the 63 before its first look", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// One read-ahead at a time: a second one started beside it does
	// nothing; once the first stopped, the next one runs.
	first := inv.startReadAhead(context.Background(), db, []time.Time{t0})
	if got := inv.startReadAhead(context.Background(), db, []time.Time{t0})(); got != 0 {
		t.Errorf("a read-ahead beside another visited %d devices, want none", got)
	}
	first()
	next := inv.startReadAhead(context.Background(), db, []time.Time{t0})
	if !inv.readingAhead.Load() {
		t.Error("the read-ahead after the first one stopped did not start")
	}
	next()
	if inv.readingAhead.Load() {
		t.Error("a stopped read-ahead still holds its place")
	}
	if got := (&Inventory{}).startReadAhead(context.Background(), nil, []time.Time{t0})(); got != 0 {
		t.Errorf("a read-ahead without a database visited %d", got)
	}
}

// A list at an instant starts its read-ahead inside its own read
// transaction. When a write that must remap the growing file comes in
// between, bbolt's remap waits for every read transaction and new ones
// wait behind it: the read-ahead's transactions are held back, and the
// list must still end (it does not wait for them inside its
// transaction), the write commit after it, and stopping the read-ahead
// return. Waiting for the read-ahead inside the transaction deadlocks
// here (checked by hand: the test fails after its minute).
func TestListAtBesideARemappingWrite(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "h.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Closed at the end, not deferred: after a deadlock Close would wait
	// for it too, and the test would hang instead of failing.
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	const devices = 2000
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucket([]byte(bucketMeta)); err != nil {
			return err
		}
		b, err := tx.CreateBucket([]byte(bucketHistory))
		if err != nil {
			return err
		}
		if _, err := tx.CreateBucket([]byte("filler")); err != nil {
			return err
		}
		for k := range devices {
			id := deviceID(fmt.Sprint("key ", k), 0)
			if err := b.Put(histKey(id, t0, uint64(k+1)), []byte(`{"id":"`+id+`"}`)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	inv := &Inventory{db: db}
	for round := range 3 {
		done := make(chan error, 1)
		go func() {
			var lists [][]history.Device
			written := make(chan error, 1)
			stop := func() int { return 0 }
			err := inv.viewHistory(context.Background(), []time.Time{t0.Add(time.Hour)}, func(r *histReader) error {
				// A value larger than the whole file: its commit must grow
				// the file past the mapping and remap, which waits for
				// this transaction.
				size := int(r.b.Tx().Size()) * 2
				go func() {
					written <- db.Update(func(tx *bolt.Tx) error {
						return tx.Bucket([]byte("filler")).Put(fmt.Appendf(nil, "v%d", round), make([]byte, size))
					})
				}()
				select {
				case err := <-written:
					return fmt.Errorf("the write committed inside a read transaction (%v): no remap", err)
				case <-time.After(100 * time.Millisecond): // the write waits for the remap
				}
				stop = inv.startReadAhead(context.Background(), r.b.Tx().DB(), []time.Time{t0.Add(time.Hour)})
				var err error
				lists, err = r.all(context.Background(), t0.Add(time.Hour))
				return err
			})
			if err == nil {
				if err = <-written; err == nil && len(lists[0]) != devices {
					err = fmt.Errorf("the list has %d devices, want %d", len(lists[0]), devices)
				}
			}
			// stop cancels the read-ahead and waits for it: after the
			// remap its transactions ran, or ended at their first look.
			if visited := stop(); err == nil && visited > devices {
				err = fmt.Errorf("the read-ahead visited %d devices of %d", visited, devices)
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("round %d: a list at an instant beside a remapping write did not end within a minute (deadlock)", round)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
