package access

import (
	"errors"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
)

// started returns a session.started event for a fresh secret.
func (l *logger) started(t testing.TB, user string, at time.Time, life time.Duration) (events.Envelope, string, string) {
	t.Helper()
	secret, sum := NewSessionSecret()
	id := SessionID()
	return l.ev(t, events.KindSessionStarted, events.SessionStarted{SessionID: id, User: user, ExpiresAt: at.Add(life), SecretSHA256: sum}, at), id, secret
}

func TestSessionSecretAndID(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		secret, sum := NewSessionSecret()
		if len(secret) != SessionSecretLen || strings.Trim(secret, base62Digits) != "" {
			t.Fatalf("secret %q", secret)
		}
		if len(sum) != 64 || sum == secret {
			t.Fatalf("sum %q", sum)
		}
		id := SessionID()
		if !strings.HasPrefix(id, SessionIDPrefix) || len(id) != len(SessionIDPrefix)+16 || strings.Trim(id[4:], base62Digits) != "" {
			t.Fatalf("id %q", id)
		}
		if seen[secret] || seen[id] {
			t.Fatal("repeated secret or id")
		}
		seen[secret], seen[id] = true, true
	}
}

func TestSessions(t *testing.T) {
	db, _ := openDB(t)
	clk := newClock(t0)
	p := New(clk.Now)
	var l logger
	apply(t, db, p,
		l.ev(t, events.KindUserAdded, events.UserAdded{Name: "ada", PasswordHash: "x"}, t0),
		l.ev(t, events.KindUserAdded, events.UserAdded{Name: "bob", PasswordHash: "x"}, t0))
	adaEv, adaID, adaSecret := l.started(t, "ada", t0, time.Hour)
	bobEv, bobID, bobSecret := l.started(t, "bob", t0, 2*time.Hour)
	ghostEv, _, ghostSecret := l.started(t, "ghost", t0, time.Hour)
	apply(t, db, p, adaEv, bobEv, ghostEv)

	tests := []struct {
		name   string
		at     time.Time
		secret string
		want   string // user, "" for none
	}{
		{"ada live", t0.Add(time.Minute), adaSecret, "ada"},
		{"bob live", t0.Add(90 * time.Minute), bobSecret, "bob"},
		{"ada expired at the instant", t0.Add(time.Hour), adaSecret, ""},
		{"unknown user never starts", t0, ghostSecret, ""},
		{"malformed", t0, "short", ""},
		{"not base62", t0, strings.Repeat("!", SessionSecretLen), ""},
		{"unknown", t0, strings.Repeat("a", SessionSecretLen), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk.Set(tc.at)
			s, err := p.Session(tc.secret)
			if tc.want == "" {
				if !errors.Is(err, ErrNoSession) {
					t.Fatalf("Session = %+v, %v; want ErrNoSession", s, err)
				}
				return
			}
			if err != nil || s.User != tc.want {
				t.Fatalf("Session = %+v, %v; want %s", s, err, tc.want)
			}
		})
	}
	if got := p.Sessions(t0); len(got) != 2 {
		t.Fatalf("Sessions = %+v, want ada's and bob's", got)
	}

	// Sessions survive a restart (Load from the buckets).
	clk.Set(t0)
	fresh := loadFresh(t, db, clk.Now)
	if s, err := fresh.Session(bobSecret); err != nil || s.ID != bobID {
		t.Fatalf("after Load: %+v %v", s, err)
	}

	// Sign-out ends one session; ending it again changes nothing.
	apply(t, db, p, l.ev(t, events.KindSessionEnded, events.SessionEnded{SessionID: adaID, Reason: events.SessionEndSignOut}, t0))
	apply(t, db, p, l.ev(t, events.KindSessionEnded, events.SessionEnded{SessionID: adaID, Reason: events.SessionEndSignOut}, t0))
	if _, err := p.Session(adaSecret); err == nil {
		t.Fatal("ada's session survived sign-out")
	}
	if _, ok := p.SessionByID(adaID); ok {
		t.Fatal("SessionByID finds an ended session")
	}

	// A password change ends the user's sessions; so does removal.
	ev2, _, bob2 := l.started(t, "bob", t0, time.Hour)
	apply(t, db, p, ev2)
	apply(t, db, p, l.ev(t, events.KindUserPasswordChanged, events.UserPasswordChanged{Name: "bob", PasswordHash: "y"}, t0))
	for _, sec := range []string{bobSecret, bob2} {
		if _, err := p.Session(sec); err == nil {
			t.Fatal("bob's session survived his password change")
		}
	}
	ev3, _, bob3 := l.started(t, "bob", t0, time.Hour)
	apply(t, db, p, ev3)
	if _, err := p.Session(bob3); err != nil {
		t.Fatal(err)
	}
	apply(t, db, p, l.ev(t, events.KindUserRemoved, events.UserRemoved{Name: "bob"}, t0))
	if _, err := p.Session(bob3); err == nil {
		t.Fatal("bob's session survived his removal")
	}
	if n := countSessions(t, db); n != 0 {
		t.Fatalf("%d sessions stored, want 0", n)
	}
}

func TestSessionsPrunedAndRolledBack(t *testing.T) {
	db, _ := openDB(t)
	clk := newClock(t0)
	p := New(clk.Now)
	var l logger
	apply(t, db, p, l.ev(t, events.KindUserAdded, events.UserAdded{Name: "ada", PasswordHash: "x"}, t0))
	old, _, _ := l.started(t, "ada", t0, time.Minute)
	apply(t, db, p, old)
	// A start after the first expired prunes it from the bucket.
	later, _, secret := l.started(t, "ada", t0.Add(time.Hour), time.Hour)
	apply(t, db, p, later)
	if n := countSessions(t, db); n != 1 {
		t.Fatalf("%d sessions stored, want the expired one pruned", n)
	}
	// A rolled-back start leaves memory alone.
	rolled, _, rsecret := l.started(t, "ada", t0.Add(time.Hour), time.Hour)
	err := db.Update(func(tx *bolt.Tx) error {
		if err := p.Apply(tx, rolled); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatal(err)
	}
	clk.Set(t0.Add(time.Hour + time.Minute))
	if _, err := p.Session(rsecret); err == nil {
		t.Fatal("a rolled-back session authenticates")
	}
	if _, err := p.Session(secret); err != nil {
		t.Fatal(err)
	}
}

func countSessions(t *testing.T, db *bolt.DB) int {
	t.Helper()
	n := 0
	_ = db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte(BucketSessions)); b != nil {
			n = b.Stats().KeyN
		}
		return nil
	})
	return n
}
