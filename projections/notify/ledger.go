package notify

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/projections"
)

// The dispatcher's buckets. They are not a projection's: a rebuild or a
// replay never touches them, so nothing is sent twice because of one.
const (
	// BucketDispatch holds the dispatcher's checkpoint ("checkpoint":
	// 8-byte big-endian seq of the last event whose changes were decided).
	BucketDispatch = "notify_dispatch"
	// BucketLedger holds one nested bucket per destination: change key
	// (8-byte seq + 4-byte position in the event) → Record JSON.
	BucketLedger = "notify_ledger"
	// BucketOutbox holds one nested bucket per destination: the keys of
	// its records still to be delivered → when the next attempt is due
	// (8-byte big-endian Unix nanoseconds; empty in ledgers of before:
	// the record says), so that a round skips the records that wait
	// without decoding them.
	BucketOutbox = "notify_outbox"
)

var keyCheckpoint = []byte("checkpoint")

// Record states.
const (
	StatePending  = "pending"  // to be sent, or retrying
	StateSent     = "sent"     // a 2xx answered
	StateFiltered = "filtered" // the destination's rules do not select it
	StateDead     = "dead"     // given up: re-deliverable
)

// Record is the ledger's entry of one change for one destination: the
// decision, every attempt and the state.
type Record struct {
	// ID is the change-log entry's id (the webhook-id).
	ID    string                  `json:"id"`
	Entry projections.ChangeEntry `json:"entry"`
	State string                  `json:"state"`
	// Reason says why it was filtered out or given up.
	Reason   string    `json:"reason,omitempty"`
	Queued   time.Time `json:"queued"`
	Attempts []Attempt `json:"attempts"`
	// AttemptsOmitted counts the attempts not kept between the first and
	// the latest (see maxAttemptsKept); 0 in all but re-delivered records.
	AttemptsOmitted int `json:"attempts_omitted,omitempty"`
	// NextAttempt is when a pending record is tried next.
	NextAttempt *time.Time `json:"next_attempt,omitempty"`
	// RetryFrom starts the retry window (the first attempt, or a
	// re-delivery).
	RetryFrom *time.Time `json:"retry_from,omitempty"`
	// Digest is set when the change went out in a digest of Count changes
	// (push and http destinations during a burst).
	Digest bool `json:"digest,omitempty"`
}

// Attempt is one try to deliver.
type Attempt struct {
	Time time.Time `json:"time"`
	// Status is the HTTP status, 0 when none came.
	Status    int     `json:"status"`
	LatencyMS float64 `json:"latency_ms"`
	// Error says what failed (never a URL's path, query or a secret).
	Error string `json:"error,omitempty"`
}

// Stats counts a destination's ledger by state.
type Stats struct {
	Pending  int `json:"pending"`
	Sent     int `json:"sent"`
	Filtered int `json:"filtered"`
	Dead     int `json:"dead"`
}

func changeKey(seq uint64, pos uint32) []byte {
	k := make([]byte, 12)
	binary.BigEndian.PutUint64(k, seq)
	binary.BigEndian.PutUint32(k[8:], pos)
	return k
}

func checkpointOf(tx *bolt.Tx) (uint64, bool) {
	b := tx.Bucket([]byte(BucketDispatch))
	if b == nil {
		return 0, false
	}
	v := b.Get(keyCheckpoint)
	if len(v) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(v), true
}

func putCheckpoint(tx *bolt.Tx, seq uint64) error {
	v := make([]byte, 8)
	binary.BigEndian.PutUint64(v, seq)
	return tx.Bucket([]byte(BucketDispatch)).Put(keyCheckpoint, v)
}

func createBuckets(tx *bolt.Tx) error {
	for _, n := range []string{BucketDispatch, BucketLedger, BucketOutbox} {
		if _, err := tx.CreateBucketIfNotExists([]byte(n)); err != nil {
			return fmt.Errorf("notify: create bucket %s: %w", n, err)
		}
	}
	return nil
}

// nested returns destination's bucket inside top, creating it in a
// writable tx; nil in a read-only one where it does not exist.
func nested(tx *bolt.Tx, top, destination string) (*bolt.Bucket, error) {
	t := tx.Bucket([]byte(top))
	if t == nil {
		return nil, nil
	}
	if !tx.Writable() {
		return t.Bucket([]byte(destination)), nil
	}
	return t.CreateBucketIfNotExists([]byte(destination))
}

func putRecord(tx *bolt.Tx, destination string, key []byte, r *Record) error {
	lb, err := nested(tx, BucketLedger, destination)
	if err != nil {
		return err
	}
	ob, err := nested(tx, BucketOutbox, destination)
	if err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := lb.Put(key, b); err != nil {
		return err
	}
	if r.State == StatePending {
		return ob.Put(key, dueValue(r.NextAttempt))
	}
	return ob.Delete(key)
}

// dueValue is an outbox value: when the next attempt is due, 0 for at
// once.
func dueValue(at *time.Time) []byte {
	v := make([]byte, 8)
	if at != nil {
		binary.BigEndian.PutUint64(v, uint64(at.UnixNano()))
	}
	return v
}

// dueAt reads an outbox value; ok is false for one that does not say.
func dueAt(v []byte) (at int64, ok bool) {
	if len(v) != 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(v)), true
}

// LedgerFilter selects ledger records, newest first.
type LedgerFilter struct {
	State  string // "" = every state
	Limit  int    // default 100, at most 1000
	Cursor string // next_cursor of the previous page
}

// ErrBadCursor is returned for a ledger cursor this package did not issue.
var ErrBadCursor = projections.ErrBadCursor

// ReadLedger lists destination's records, newest first.
func ReadLedger(db *bolt.DB, destination string, f LedgerFilter) (projections.Page[Record], error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	f.Limit = min(f.Limit, 1000)
	var start []byte
	if f.Cursor != "" {
		k, err := hex.DecodeString(f.Cursor)
		if err != nil || len(k) != 12 {
			return projections.Page[Record]{}, ErrBadCursor
		}
		start = k
	}
	page := projections.Page[Record]{Items: []Record{}}
	err := db.View(func(tx *bolt.Tx) error {
		lb, _ := nested(tx, BucketLedger, destination)
		if lb == nil {
			return nil
		}
		c := lb.Cursor()
		var k, v []byte
		switch {
		case start == nil:
			k, v = c.Last()
		default:
			// The cursor is the key of the last record returned: start
			// strictly before it.
			if k, _ = c.Seek(start); k == nil {
				k, v = c.Last()
			} else {
				k, v = c.Prev()
			}
		}
		var lastK []byte
		for ; k != nil; k, v = c.Prev() {
			var r Record
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("record %x: %w", k, err)
			}
			if f.State != "" && r.State != f.State {
				continue
			}
			if len(page.Items) == f.Limit {
				cur := hex.EncodeToString(lastK)
				page.NextCursor = &cur
				return nil
			}
			page.Items = append(page.Items, r)
			lastK = append(lastK[:0], k...)
		}
		return nil
	})
	if err != nil {
		return projections.Page[Record]{}, fmt.Errorf("notify: ledger of %s: %w", destination, err)
	}
	return page, nil
}

// LedgerStats counts destination's records by state.
func LedgerStats(db *bolt.DB, destination string) (Stats, error) {
	var s Stats
	err := db.View(func(tx *bolt.Tx) error {
		lb, _ := nested(tx, BucketLedger, destination)
		if lb == nil {
			return nil
		}
		return lb.ForEach(func(k, v []byte) error {
			var r struct {
				State string `json:"state"`
			}
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			switch r.State {
			case StatePending:
				s.Pending++
			case StateSent:
				s.Sent++
			case StateFiltered:
				s.Filtered++
			case StateDead:
				s.Dead++
			}
			return nil
		})
	})
	if err != nil {
		return Stats{}, fmt.Errorf("notify: ledger stats of %s: %w", destination, err)
	}
	return s, nil
}

// ErrNotDead is returned by Redeliver for a record that is not dead.
var ErrNotDead = errors.New("notify: only a dead record can be re-delivered")

// Redeliver puts destination's dead records back in the outbox with a
// fresh retry window: the one with change-log entry id, or every dead
// one when id is "". It returns how many it queued; a record that is not
// dead is ErrNotDead, an unknown id projections.ErrNotFound. A running
// dispatcher picks them up within its poll interval (at once when told
// through Dispatcher.Redeliver). update runs the write transaction: the
// store's Update in serve (a failed commit fails the store), a bare
// bbolt file's in tests.
func Redeliver(update func(func(*bolt.Tx) error) error, destination, id string, now time.Time) (int, error) {
	n := 0
	err := update(func(tx *bolt.Tx) error {
		if err := createBuckets(tx); err != nil {
			return err
		}
		lb, err := nested(tx, BucketLedger, destination)
		if err != nil {
			return err
		}
		type kr struct {
			k []byte
			r Record
		}
		var todo []kr
		found := false
		err = lb.ForEach(func(k, v []byte) error {
			var r Record
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			if id != "" && r.ID != id {
				return nil
			}
			found = true
			if r.State != StateDead {
				if id != "" {
					return ErrNotDead
				}
				return nil
			}
			todo = append(todo, kr{append([]byte(nil), k...), r})
			return nil
		})
		if err != nil {
			return err
		}
		if id != "" && !found {
			return projections.ErrNotFound
		}
		t := now.UTC()
		for _, x := range todo {
			x.r.State, x.r.Reason = StatePending, ""
			x.r.NextAttempt, x.r.RetryFrom = &t, &t
			if err := putRecord(tx, destination, x.k, &x.r); err != nil {
				return err
			}
		}
		n = len(todo)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("notify: redeliver to %s: %w", destination, err)
	}
	return n, nil
}
