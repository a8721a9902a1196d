package access

import (
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
)

func TestSessionIdleOutlivesARestart(t *testing.T) {
	const idle = 30 * time.Minute
	db, _ := openDB(t)
	clk := newClock(t0)
	p := New(clk.Now)
	var l logger
	apply(t, db, p, l.ev(t, events.KindUserAdded, events.UserAdded{Name: "ada", PasswordHash: "x"}, t0))
	adaEv, adaID, _ := l.started(t, "ada", t0, 24*time.Hour)
	bobEv, bobID, _ := l.started(t, "ada", t0, 24*time.Hour)
	apply(t, db, p, adaEv, bobEv)

	// Requests every 20 minutes keep a session.
	for k := 1; k <= 3; k++ {
		if p.TouchSession(adaID, t0.Add(time.Duration(k)*20*time.Minute), idle) {
			t.Fatalf("request %d: idle", k)
		}
	}
	last := t0.Add(60 * time.Minute)
	if err := p.FlushLastUsed(db); err != nil {
		t.Fatal(err)
	}
	// After a restart the idle time counts from the last request
	// (flushed), not from the restart: live 25 minutes after it, idle
	// past the timeout.
	fresh := loadFresh(t, db, clk.Now)
	if fresh.TouchSession(adaID, last.Add(25*time.Minute), idle) {
		t.Fatal("idle 25 minutes after the last request, across a restart")
	}
	if err := fresh.FlushLastUsed(db); err != nil {
		t.Fatal(err)
	}
	again := loadFresh(t, db, clk.Now)
	if !again.TouchSession(adaID, last.Add(25*time.Minute+idle+time.Second), idle) {
		t.Fatal("not idle past the timeout after a restart (the old tracker forgot every session at a restart)")
	}
	// A session whose requests were never flushed counts from its start.
	if !again.TouchSession(bobID, t0.Add(idle+time.Second), idle) {
		t.Fatal("a session with no recorded request is not idle a timeout after its start")
	}
}

func TestSessionActivityOfEndedSessionsGoes(t *testing.T) {
	db, _ := openDB(t)
	clk := newClock(t0)
	p := New(clk.Now)
	var l logger
	apply(t, db, p, l.ev(t, events.KindUserAdded, events.UserAdded{Name: "ada", PasswordHash: "x"}, t0))
	ev, id, _ := l.started(t, "ada", t0, time.Hour)
	apply(t, db, p, ev)
	p.TouchSession(id, t0.Add(time.Minute), time.Hour)
	if err := p.FlushLastUsed(db); err != nil {
		t.Fatal(err)
	}
	if n := countActive(t, db); n != 1 {
		t.Fatalf("%d entries after a request, want 1", n)
	}
	apply(t, db, p, l.ev(t, events.KindSessionEnded, events.SessionEnded{SessionID: id, Reason: events.SessionEndSignOut}, t0.Add(2*time.Minute)))
	if err := p.FlushLastUsed(db); err != nil {
		t.Fatal(err)
	}
	if n := countActive(t, db); n != 0 {
		t.Fatalf("%d entries after the session ended, want 0", n)
	}
	if len(p.active) != 0 {
		t.Fatalf("memory keeps %d entries of ended sessions", len(p.active))
	}
}

func countActive(t *testing.T, db *bolt.DB) int {
	t.Helper()
	n := 0
	err := db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bSessionActive); b != nil {
			n = b.Stats().KeyN
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
