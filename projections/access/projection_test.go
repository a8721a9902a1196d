package access

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
	bolt "go.etcd.io/bbolt"
)

func TestProjectionIdentity(t *testing.T) {
	p := New(nil)
	if p.Name() != "access" || p.Version() != 1 {
		t.Errorf("Name, Version = %q, %d", p.Name(), p.Version())
	}
	if diff := cmp.Diff([]string{BucketTokens, BucketUsers, BucketSessions}, p.Buckets()); diff != "" {
		t.Errorf("Buckets (-want +got):\n%s", diff)
	}
}

// state is everything the projection answers, for comparisons.
type state struct {
	Tokens []projections.Token
	Users  []User
}

func stateOf(p *Projection, now time.Time) state {
	return state{Tokens: p.Tokens(now), Users: p.Users()}
}

func TestApplyLoadRoundTrip(t *testing.T) {
	db, path := openDB(t)
	clk := newClock(t0.Add(40 * 24 * time.Hour))
	p := New(clk.Now)
	var l logger
	hAlice, err := HashPassword("alice's password")
	if err != nil {
		t.Fatal(err)
	}
	evA, idA, secretA := l.created(t, "grafana", events.ModeRead, "never", t0)
	evB, idB, _ := l.created(t, "old", events.ModeReadWrite, "30d", t0.Add(time.Minute))
	evC, idC, secretC := l.created(t, "ci", events.ModeReadWrite, "1y", t0.Add(2*time.Minute))
	other := l.ev(t, events.KindClockTicked, events.ClockTicked{}, t0)
	evs := []events.Envelope{
		evA, evB, evC, other,
		l.ev(t, events.KindTokenRevoked, events.TokenRevoked{TokenID: idC}, t0.Add(time.Hour)),
		l.ev(t, events.KindUserAdded, events.UserAdded{Name: "alice", PasswordHash: hAlice}, t0),
		l.ev(t, events.KindUserAdded, events.UserAdded{Name: "bob", PasswordHash: "$argon2id$bob"}, t0.Add(time.Second)),
		l.ev(t, events.KindUserAdded, events.UserAdded{Name: "carol", PasswordHash: "$argon2id$carol"}, t0.Add(2*time.Second)),
		l.ev(t, events.KindUserPasswordChanged, events.UserPasswordChanged{Name: "bob", PasswordHash: "$argon2id$bob2"}, t0.Add(time.Hour)),
		l.ev(t, events.KindUserRemoved, events.UserRemoved{Name: "carol"}, t0.Add(time.Hour)),
		// No-ops: a second user.added of alice, changes of unknown users.
		l.ev(t, events.KindUserAdded, events.UserAdded{Name: "alice", PasswordHash: "$argon2id$takeover"}, t0.Add(2*time.Hour)),
		l.ev(t, events.KindUserPasswordChanged, events.UserPasswordChanged{Name: "carol", PasswordHash: "$x"}, t0.Add(2*time.Hour)),
		l.ev(t, events.KindUserRemoved, events.UserRemoved{Name: "dave"}, t0.Add(2*time.Hour)),
	}
	// Half in one transaction, the rest one per transaction.
	apply(t, db, p, evs[:5]...)
	for _, e := range evs[5:] {
		apply(t, db, p, e)
	}
	if _, err := p.Authenticate(context.Background(), secretA); err != nil {
		t.Fatalf("Authenticate(a): %v", err)
	}
	if _, err := p.Authenticate(context.Background(), secretC); err != projections.ErrInvalidToken {
		t.Fatalf("token revoked in the same transaction authenticates: %v", err)
	}
	if err := p.FlushLastUsed(db); err != nil {
		t.Fatal(err)
	}
	now := clk.Now()
	want := stateOf(p, now)
	lu := now
	changed := t0.Add(time.Hour)
	wantExplicit := state{
		Tokens: []projections.Token{
			{ID: idA, Name: "grafana", Mode: events.ModeRead, CreatedAt: t0, LastUsedAt: &lu, State: StateActive},
			{ID: idB, Name: "old", Mode: events.ModeReadWrite, CreatedAt: t0.Add(time.Minute), ExpiresAt: ptr(t0.Add(time.Minute + 720*time.Hour)), State: StateExpired},
		},
		Users: []User{
			{Name: "alice", CreatedAt: t0},
			{Name: "bob", CreatedAt: t0.Add(time.Second), PasswordChangedAt: &changed},
		},
	}
	if diff := cmp.Diff(wantExplicit, want); diff != "" {
		t.Fatalf("state after Apply (-want +got):\n%s", diff)
	}
	if !p.CheckPassword("alice", "alice's password") {
		t.Errorf("the second user.added of alice replaced her hash")
	}

	// Reopen the file: Load gives the same answers.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	p2 := loadFresh(t, db2, clk.Now)
	if diff := cmp.Diff(want, stateOf(p2, now)); diff != "" {
		t.Fatalf("state after Load (-Apply +Load):\n%s", diff)
	}
	if pr, err := p2.Authenticate(context.Background(), secretA); err != nil || pr.TokenID != idA {
		t.Fatalf("Authenticate after Load = %+v, %v", pr, err)
	}
	if !p2.CheckPassword("alice", "alice's password") {
		t.Errorf("CheckPassword after Load refused")
	}

	// A replay of the same events into a fresh file gives the same state,
	// except last_used_at, which replays leave empty.
	db3, _ := openDB(t)
	p3 := New(clk.Now)
	apply(t, db3, p3, evs...)
	wantReplay := want
	wantReplay.Tokens = append([]projections.Token(nil), want.Tokens...)
	wantReplay.Tokens[0].LastUsedAt = nil
	if diff := cmp.Diff(wantReplay, stateOf(p3, now)); diff != "" {
		t.Fatalf("state after replay (-want +got):\n%s", diff)
	}
	// ... and the same bytes in the projection's buckets.
	if diff := cmp.Diff(dumpBuckets(t, db2, p.Buckets()), dumpBuckets(t, db3, p.Buckets())); diff != "" {
		t.Fatalf("buckets after replay differ (-original +replay):\n%s", diff)
	}
}

func dumpBuckets(t *testing.T, db *bolt.DB, names []string) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	err := db.View(func(tx *bolt.Tx) error {
		for _, n := range names {
			m := map[string]string{}
			if b := tx.Bucket([]byte(n)); b != nil {
				if err := b.ForEach(func(k, v []byte) error { m[string(k)] = string(v); return nil }); err != nil {
					return err
				}
			}
			out[n] = m
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func TestApplyRollbackLeavesMemory(t *testing.T) {
	db, _ := openDB(t)
	p := New(newClock(t0).Now)
	var l logger
	ev, id, secret := l.created(t, "a", events.ModeRead, "never", t0)
	err := db.Update(func(tx *bolt.Tx) error {
		if err := p.Apply(tx, ev); err != nil {
			return err
		}
		if err := p.Apply(tx, l.ev(t, events.KindUserAdded, events.UserAdded{Name: "u", PasswordHash: "h"}, t0)); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("Update = %v", err)
	}
	if _, err := p.Token(id); !errors.Is(err, projections.ErrNotFound) {
		t.Errorf("a rolled-back token.created is in memory")
	}
	if _, err := p.Authenticate(context.Background(), secret); err != projections.ErrInvalidToken {
		t.Errorf("a rolled-back token authenticates")
	}
	if len(p.Users()) != 0 || p.HasUsers() {
		t.Errorf("a rolled-back user.added is in memory")
	}
	// Applied again for real, it takes effect.
	apply(t, db, p, ev)
	if _, err := p.Authenticate(context.Background(), secret); err != nil {
		t.Errorf("Authenticate after commit: %v", err)
	}
}

func TestApplyErrors(t *testing.T) {
	db, _ := openDB(t)
	p := New(nil)
	tests := []struct {
		name string
		ev   events.Envelope
	}{
		{"token.created not an object", events.Envelope{Seq: 1, Kind: events.KindTokenCreated, V: 1, Payload: json.RawMessage(`[1]`)}},
		{"token.revoked wrong type", events.Envelope{Seq: 2, Kind: events.KindTokenRevoked, V: 1, Payload: json.RawMessage(`{"token_id": 5}`)}},
		{"user.added future version", events.Envelope{Seq: 3, Kind: events.KindUserAdded, V: 99, Payload: json.RawMessage(`{}`)}},
		{"user.removed garbage", events.Envelope{Seq: 4, Kind: events.KindUserRemoved, V: 1, Payload: json.RawMessage(`{`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := db.Update(func(tx *bolt.Tx) error { return p.Apply(tx, tt.ev) })
			if err == nil {
				t.Fatalf("Apply accepted %s", tt.ev.Payload)
			}
		})
	}
	// Events of other kinds and records without a key are ignored.
	var l logger
	apply(t, db, p,
		l.ev(t, events.KindClockTicked, events.ClockTicked{}, t0),
		l.ev(t, events.KindTokenCreated, events.TokenCreated{Name: "no id"}, t0),
		l.ev(t, events.KindUserAdded, events.UserAdded{PasswordHash: "no name"}, t0),
	)
	if len(p.Tokens(t0)) != 0 || len(p.Users()) != 0 {
		t.Errorf("keyless records were applied")
	}
}

func TestLoadCorrupt(t *testing.T) {
	for _, bucket := range []string{BucketTokens, BucketUsers, BucketLastUsed} {
		t.Run(bucket, func(t *testing.T) {
			db, _ := openDB(t)
			err := db.Update(func(tx *bolt.Tx) error {
				b, err := tx.CreateBucketIfNotExists([]byte(bucket))
				if err != nil {
					return err
				}
				return b.Put([]byte("k"), []byte("{not json"))
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.View(New(nil).Load); err == nil {
				t.Fatalf("Load accepted a corrupt %s record", bucket)
			}
		})
	}
	t.Run("empty database", func(t *testing.T) {
		db, _ := openDB(t)
		p := New(nil)
		if err := db.View(p.Load); err != nil {
			t.Fatalf("Load of an empty database: %v", err)
		}
		if len(p.Tokens(t0)) != 0 || len(p.Users()) != 0 || p.HasUsers() {
			t.Errorf("empty database gave records")
		}
	})
}

func TestUsersListAndLookup(t *testing.T) {
	db, _ := openDB(t)
	p := New(nil)
	var l logger
	apply(t, db, p,
		l.ev(t, events.KindUserAdded, events.UserAdded{Name: "zed", PasswordHash: "h"}, t0),
		l.ev(t, events.KindUserAdded, events.UserAdded{Name: "amy", PasswordHash: "h"}, t0.Add(time.Hour)),
	)
	got := p.Users()
	want := []User{{Name: "amy", CreatedAt: t0.Add(time.Hour)}, {Name: "zed", CreatedAt: t0}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Users (-want +got):\n%s", diff)
	}
	if _, err := p.User("nobody"); !errors.Is(err, projections.ErrNotFound) {
		t.Errorf("User(nobody) error = %v, want ErrNotFound", err)
	}
	b, err := json.Marshal(got[0])
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"name":"amy","created_at":"2026-03-01T13:00:00Z","password_changed_at":null}` {
		t.Errorf("User JSON = %s (must never carry the hash)", b)
	}
}
