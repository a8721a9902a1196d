package notify

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func testDB(t *testing.T) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "c.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Update(createBuckets); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestCommitterGroups: writes sent at once share transactions, each
// returns only once its write is committed, and a failing write fails
// alone while the others of its group still land.
func TestCommitterGroups(t *testing.T) {
	errBad := errors.New("bad write")
	tests := []struct {
		name    string
		writers int
		bad     map[int]bool
	}{
		{"one", 1, nil},
		{"many", 40, nil},
		{"one bad alone", 1, map[int]bool{0: true}},
		{"bad ones among many", 40, map[int]bool{3: true, 17: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := testDB(t)
			c := newCommitter(db.Update)
			done := make(chan struct{})
			go func() { defer close(done); c.run() }()
			// Hold the writer lock so that the writes pile up behind the
			// first and go out in groups.
			hold := make(chan struct{})
			held := make(chan struct{})
			go func() {
				_ = db.Update(func(*bolt.Tx) error { close(held); <-hold; return nil })
			}()
			<-held
			errs := make([]error, tt.writers)
			var wg sync.WaitGroup
			for i := range tt.writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = c.update(func(tx *bolt.Tx) error {
						if tt.bad[i] {
							// Written, then failed: must not land.
							_ = tx.Bucket([]byte(BucketDispatch)).Put([]byte(fmt.Sprint("k", i)), []byte("x"))
							return errBad
						}
						return tx.Bucket([]byte(BucketDispatch)).Put([]byte(fmt.Sprint("k", i)), []byte("x"))
					})
				}()
			}
			time.Sleep(50 * time.Millisecond)
			close(hold)
			wg.Wait()
			c.close()
			<-done
			err := db.View(func(tx *bolt.Tx) error {
				b := tx.Bucket([]byte(BucketDispatch))
				for i := range tt.writers {
					landed := b.Get([]byte(fmt.Sprint("k", i))) != nil
					switch {
					case tt.bad[i] && !errors.Is(errs[i], errBad):
						t.Errorf("write %d: %v, want its own error", i, errs[i])
					case !tt.bad[i] && errs[i] != nil:
						t.Errorf("write %d: %v, want nil (another write's failure is not its own)", i, errs[i])
					case landed == tt.bad[i]:
						t.Errorf("write %d landed=%v, want %v", i, landed, !tt.bad[i])
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			commits, writes := c.commits.Load(), c.writes.Load()
			if writes < uint64(tt.writers) {
				t.Errorf("%d writes counted, want at least %d", writes, tt.writers)
			}
			if tt.writers > 10 && len(tt.bad) == 0 && commits >= uint64(tt.writers) {
				t.Errorf("%d writers took %d commits: not grouped", tt.writers, commits)
			}
		})
	}
}

// TestDueSkipsWaiting: the outbox value says when a record is due, so a
// round reads only the due ones; ledgers of before (empty values) still
// work through the record.
func TestDueSkipsWaiting(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	later, earlier := now.Add(time.Minute), now.Add(-time.Second)
	tests := []struct {
		name     string
		next     *time.Time
		legacy   bool // an empty outbox value, as written before
		wantDue  bool
		wantNext time.Time
	}{
		{"due now", &now, false, true, time.Time{}},
		{"due before", &earlier, false, true, time.Time{}},
		{"no time: at once", nil, false, true, time.Time{}},
		{"waiting", &later, false, false, later},
		{"legacy due", &earlier, true, true, time.Time{}},
		{"legacy waiting", &later, true, false, later},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := testDB(t)
			key := changeKey(7, 0)
			err := db.Update(func(tx *bolt.Tx) error {
				r := &Record{ID: "ev7-0", State: StatePending, NextAttempt: tt.next, Attempts: []Attempt{}}
				if err := putRecord(tx, "hook", key, r); err != nil {
					return err
				}
				ob, _ := nested(tx, BucketOutbox, "hook")
				if tt.legacy {
					return ob.Put(key, []byte{})
				}
				if v, ok := dueAt(ob.Get(key)); !ok || (tt.next != nil && v != tt.next.UnixNano()) {
					return fmt.Errorf("outbox value %x does not say %v", ob.Get(key), tt.next)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			s := &sender{d: &Dispatcher{o: Options{DB: db}}, dest: &Destination{Name: "hook"}}
			batch, next, err := s.due(now, 10)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(batch) == 1; got != tt.wantDue {
				t.Errorf("due: %d records, want due=%v", len(batch), tt.wantDue)
			}
			if !next.Equal(tt.wantNext) {
				t.Errorf("next %v, want %v", next, tt.wantNext)
			}
		})
	}
}

// TestCommitterLinger: writes that come one at a time, a millisecond
// apart (a steady load: each would otherwise find the committer idle and
// take a transaction of its own), share transactions; a write after a
// quiet spell is committed without waiting for company.
func TestCommitterLinger(t *testing.T) {
	db := testDB(t)
	c := newCommitter(db.Update)
	done := make(chan struct{})
	go func() { defer close(done); c.run() }()
	defer func() { c.close(); <-done }()
	put := func(k string) error {
		return c.update(func(tx *bolt.Tx) error { return tx.Bucket([]byte(BucketDispatch)).Put([]byte(k), []byte("x")) })
	}

	// Idle: one write, committed at once (well under the linger).
	time.Sleep(2 * groupLinger)
	start := time.Now()
	if err := put("alone"); err != nil {
		t.Fatal(err)
	}
	if c.commits.Load() != 1 {
		t.Fatalf("%d commits for one write", c.commits.Load())
	}
	alone := time.Since(start)

	// Steady: 60 writers, each starting 1 ms after the one before.
	before := c.commits.Load()
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := put(fmt.Sprint("k", i)); err != nil {
				t.Error(err)
			}
		}()
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	if n := c.commits.Load() - before; n > 30 {
		t.Errorf("60 writes a millisecond apart took %d commits, want them grouped", n)
	}
	t.Logf("a write alone: %s; 60 writes a millisecond apart: %d commits", alone, c.commits.Load()-before)
}

// TestCommitFailedGroup: when a group's commit fails (a full disk), every
// write of the group gets the commit's error, and none is tried again on
// its own (the store refuses after a failed commit).
func TestCommitFailedGroup(t *testing.T) {
	db := testDB(t)
	diskFull := errors.New("write jocasta.db: no space left on device")
	calls := 0
	c := newCommitter(func(fn func(*bolt.Tx) error) error {
		calls++
		if err := db.View(fn); err != nil { // (a read transaction: fn's puts fail)
			return err
		}
		return diskFull
	})
	var group []writeReq
	for range 3 {
		group = append(group, writeReq{fn: func(*bolt.Tx) error { return nil }, done: make(chan error, 1)})
	}
	c.commit(group)
	for i, r := range group {
		if err := <-r.done; !errors.Is(err, diskFull) {
			t.Errorf("write %d answered %v, want the commit's error", i, err)
		}
	}
	if calls != 1 {
		t.Fatalf("%d transactions, want the group's one and no retries", calls)
	}
}
