package remote

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/jocasta/jocasta/events"
)

var bOutbox = []byte("outbox")

// Entry is one observation waiting in a sensor's outbox.
type Entry struct {
	// Key orders the outbox: entries leave in Key order.
	Key uint64 `json:"-"`
	// Kind is the source instance's kind.
	Kind  string          `json:"kind"`
	Event events.Envelope `json:"event"`
}

// Outbox is a sensor's durable queue of observations not yet
// acknowledged by JetStream: a bbolt file of its own (0600). Put returns
// once the entry is on disk, so a crash after Record loses nothing.
type Outbox struct {
	db   *bolt.DB
	wake chan struct{}

	mu     sync.Mutex
	closed bool
}

// OpenOutbox opens or creates the outbox file at path (mode 0600).
func OpenOutbox(path string) (*Outbox, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("remote: open outbox %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		db.Close()
		return nil, fmt.Errorf("remote: outbox %s: %w", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bOutbox)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("remote: outbox %s: %w", path, err)
	}
	return &Outbox{db: db, wake: make(chan struct{}, 1)}, nil
}

// Put stores an entry at the end of the outbox and returns its key.
func (o *Outbox) Put(kind string, e events.Envelope) (uint64, error) {
	b, err := json.Marshal(Entry{Kind: kind, Event: e})
	if err != nil {
		return 0, fmt.Errorf("remote: outbox: encode %s: %w", e.ID, err)
	}
	var key uint64
	err = o.update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bOutbox)
		key, err = bk.NextSequence()
		if err != nil {
			return err
		}
		return bk.Put(u64key(key), b)
	})
	if err != nil {
		return 0, fmt.Errorf("remote: outbox: put %s: %w", e.ID, err)
	}
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return key, nil
}

// Peek returns up to max entries from the front of the outbox, in order.
func (o *Outbox) Peek(max int) ([]Entry, error) {
	var out []Entry
	err := o.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bOutbox).Cursor()
		for k, v := c.First(); k != nil && len(out) < max; k, v = c.Next() {
			var e Entry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("entry %x: %w", k, err)
			}
			e.Key = binary.BigEndian.Uint64(k)
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("remote: outbox: peek: %w", err)
	}
	return out, nil
}

// Remove deletes the entries with keys, once JetStream has them.
func (o *Outbox) Remove(keys ...uint64) error {
	if len(keys) == 0 {
		return nil
	}
	err := o.update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bOutbox)
		for _, k := range keys {
			if err := bk.Delete(u64key(k)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("remote: outbox: remove: %w", err)
	}
	return nil
}

// Len is the number of entries waiting.
func (o *Outbox) Len() int {
	n := 0
	_ = o.view(func(tx *bolt.Tx) error {
		n = tx.Bucket(bOutbox).Stats().KeyN
		return nil
	})
	return n
}

// Wake is signalled (coalesced) after each Put.
func (o *Outbox) Wake() <-chan struct{} { return o.wake }

// Close closes the file; later calls return ErrClosed.
func (o *Outbox) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil
	}
	o.closed = true
	return o.db.Close()
}

func (o *Outbox) update(fn func(*bolt.Tx) error) error {
	o.mu.Lock()
	closed := o.closed
	o.mu.Unlock()
	if closed {
		return ErrClosed
	}
	err := o.db.Update(fn)
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

func (o *Outbox) view(fn func(*bolt.Tx) error) error {
	o.mu.Lock()
	closed := o.closed
	o.mu.Unlock()
	if closed {
		return ErrClosed
	}
	err := o.db.View(fn)
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}

func u64key(n uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	return b[:]
}
