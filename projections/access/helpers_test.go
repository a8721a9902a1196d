package access

import (
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	bolt "go.etcd.io/bbolt"
)

// t0 is the creation time of the test tokens.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// clock is a settable clock for the projection.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *clock { return &clock{t: t} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func openDB(t testing.TB) (*bolt.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "access.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatalf("bolt.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

// logger numbers events like the store does.
type logger struct{ seq uint64 }

func (l *logger) ev(t testing.TB, kind string, payload any, at time.Time) events.Envelope {
	t.Helper()
	e, err := events.New(kind, payload, at)
	if err != nil {
		t.Fatalf("events.New(%s): %v", kind, err)
	}
	l.seq++
	e.Seq = l.seq
	return e
}

// apply applies evs in one write transaction.
func apply(t testing.TB, db *bolt.DB, p *Projection, evs ...events.Envelope) {
	t.Helper()
	err := db.Update(func(tx *bolt.Tx) error {
		for _, e := range evs {
			if err := p.Apply(tx, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
}

// created returns a token.created event for a fresh secret.
func (l *logger) created(t testing.TB, name, mode, expiry string, at time.Time) (events.Envelope, string, string) {
	t.Helper()
	exp, err := ParseExpiry(expiry, at)
	if err != nil {
		t.Fatalf("ParseExpiry(%q): %v", expiry, err)
	}
	secret, sum := NewTokenSecret()
	id := TokenID()
	return l.ev(t, events.KindTokenCreated, events.TokenCreated{
		TokenID: id, Name: name, Mode: mode, ExpiresAt: exp, SecretSHA256: sum,
	}, at), id, secret
}

func loadFresh(t testing.TB, db *bolt.DB, now func() time.Time) *Projection {
	t.Helper()
	p := New(now)
	if err := db.View(p.Load); err != nil {
		t.Fatalf("Load: %v", err)
	}
	return p
}

var errRollback = errors.New("rollback")
