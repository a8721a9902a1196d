package access

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
)

// BucketSessions holds the web sign-in sessions (key: session id). It is
// one of the projection's Buckets: sessions survive a restart.
const BucketSessions = "access_sessions"

var bSessions = []byte(BucketSessions)

// Session secret and id formats.
const (
	// SessionSecretLen is the length of a session cookie's secret: the
	// left-padded base62 form of 32 crypto/rand bytes.
	SessionSecretLen = secretDigits
	// SessionIDPrefix starts every session id.
	SessionIDPrefix = "ses_"
	sessionIDDigits = 16
)

// ErrNoSession is returned by Projection.Session for a secret that is
// malformed, unknown, expired or ended, or whose user is gone: nothing
// tells them apart.
var ErrNoSession = errors.New("no such session")

// Session is a web sign-in session as the read model lists it (never its
// secret or hash).
type Session struct {
	ID        string    `json:"id"`
	User      string    `json:"user"`
	StartedAt time.Time `json:"started_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// sessionRec is a session as stored in BucketSessions.
type sessionRec struct {
	Session
	SecretSHA256 string `json:"secret_sha256"`
}

type session struct {
	rec  sessionRec
	hash [32]byte
}

// sessionSet is the in-memory half of the sessions, guarded by its own
// lock. The zero value is empty and ready.
type sessionSet struct {
	mu     sync.RWMutex
	byID   map[string]*session
	byHash map[[32]byte]*session
}

func (s *sessionSet) put(rec sessionRec) {
	h, err := hex.DecodeString(rec.SecretSHA256)
	if err != nil || len(h) != 32 {
		return // never authenticates
	}
	ss := &session{rec: rec}
	copy(ss.hash[:], h)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID, s.byHash = map[string]*session{}, map[[32]byte]*session{}
	}
	s.byID[rec.ID] = ss
	s.byHash[ss.hash] = ss
}

func (s *sessionSet) drop(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if ss, ok := s.byID[id]; ok {
			delete(s.byID, id)
			if s.byHash[ss.hash] == ss {
				delete(s.byHash, ss.hash)
			}
		}
	}
}

func (s *sessionSet) reset() {
	s.mu.Lock()
	s.byID, s.byHash = map[string]*session{}, map[[32]byte]*session{}
	s.mu.Unlock()
}

// NewSessionSecret returns a new session cookie secret (43 base62
// characters from 32 crypto/rand bytes) and its hex SHA-256, which is all
// that may be stored.
func NewSessionSecret() (secret, sha256hex string) {
	var b [secretBytes]byte
	_, _ = rand.Read(b[:]) // never fails (Go ≥ 1.24)
	digits := new(big.Int).SetBytes(b[:]).Text(62)
	secret = strings.Repeat("0", secretDigits-len(digits)) + digits
	sum := sha256.Sum256([]byte(secret))
	return secret, hex.EncodeToString(sum[:])
}

// SessionID returns a new session id: "ses_" and 16 base62 characters.
func SessionID() string {
	digits := TokenID()[len(IDPrefix):] + TokenID()[len(IDPrefix):] // 20 base62 digits
	return SessionIDPrefix + digits[:sessionIDDigits]
}

// Session returns the live session whose cookie secret is secret, judged
// by the projection's clock: not expired, not ended, its user present.
// Anything else is ErrNoSession. The hashes are compared in constant time.
func (p *Projection) Session(secret string) (Session, error) {
	if len(secret) != SessionSecretLen {
		return Session{}, ErrNoSession
	}
	for i := 0; i < len(secret); i++ {
		if !isBase62(secret[i]) {
			return Session{}, ErrNoSession
		}
	}
	sum := sha256.Sum256([]byte(secret))
	p.sessions.mu.RLock()
	ss := p.sessions.byHash[sum]
	p.sessions.mu.RUnlock()
	if ss == nil || subtle.ConstantTimeCompare(ss.hash[:], sum[:]) != 1 {
		return Session{}, ErrNoSession
	}
	if !p.now().Before(ss.rec.ExpiresAt) {
		return Session{}, ErrNoSession
	}
	p.mu.RLock()
	_, userOK := p.users[ss.rec.User]
	p.mu.RUnlock()
	if !userOK {
		return Session{}, ErrNoSession
	}
	return ss.rec.Session, nil
}

// SessionByID returns a session that has not ended (it may have
// expired), and whether there is one.
func (p *Projection) SessionByID(id string) (Session, bool) {
	p.sessions.mu.RLock()
	defer p.sessions.mu.RUnlock()
	ss, ok := p.sessions.byID[id]
	if !ok {
		return Session{}, false
	}
	return ss.rec.Session, true
}

// Sessions lists the unexpired sessions as of now, oldest first.
func (p *Projection) Sessions(now time.Time) []Session {
	p.sessions.mu.RLock()
	out := make([]Session, 0, len(p.sessions.byID))
	for _, ss := range p.sessions.byID {
		if now.Before(ss.rec.ExpiresAt) {
			out = append(out, ss.rec.Session)
		}
	}
	p.sessions.mu.RUnlock()
	slices.SortFunc(out, func(a, b Session) int {
		if c := a.StartedAt.Compare(b.StartedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// applySession folds session.started and session.ended. A start also
// deletes the sessions that had expired by its time, so the bucket does
// not grow without bound; the pruning depends only on the event.
func (p *Projection) applySession(tx *bolt.Tx, ev events.Envelope) error {
	b, err := tx.CreateBucketIfNotExists(bSessions)
	if err != nil {
		return fmt.Errorf("access: applying seq %d: bucket %s: %w", ev.Seq, BucketSessions, err)
	}
	if ev.Kind == events.KindSessionEnded {
		var pl events.SessionEnded
		if err := events.DecodeInto(ev, &pl); err != nil {
			return fmt.Errorf("access: applying seq %d: %w", ev.Seq, err)
		}
		if pl.SessionID == "" || b.Get([]byte(pl.SessionID)) == nil {
			return nil
		}
		if err := b.Delete([]byte(pl.SessionID)); err != nil {
			return fmt.Errorf("access: applying seq %d: deleting session: %w", ev.Seq, err)
		}
		tx.OnCommit(func() { p.sessions.drop(pl.SessionID) })
		return nil
	}
	var pl events.SessionStarted
	if err := events.DecodeInto(ev, &pl); err != nil {
		return fmt.Errorf("access: applying seq %d: %w", ev.Seq, err)
	}
	at := ev.Time.UTC()
	expired, err := deleteSessions(b, func(r sessionRec) bool { return !at.Before(r.ExpiresAt) })
	if err != nil {
		return fmt.Errorf("access: applying seq %d: %w", ev.Seq, err)
	}
	if len(expired) > 0 {
		tx.OnCommit(func() { p.sessions.drop(expired...) })
	}
	if pl.SessionID == "" || pl.User == "" || b.Get([]byte(pl.SessionID)) != nil {
		return nil
	}
	if ub := tx.Bucket(bUsers); ub == nil || ub.Get([]byte(pl.User)) == nil {
		return nil // no such account: nothing to sign in to
	}
	rec := sessionRec{
		Session:      Session{ID: pl.SessionID, User: pl.User, StartedAt: at, ExpiresAt: pl.ExpiresAt.UTC()},
		SecretSHA256: pl.SecretSHA256,
	}
	if err := putJSON(b, rec.ID, rec); err != nil {
		return fmt.Errorf("access: applying seq %d: %w", ev.Seq, err)
	}
	tx.OnCommit(func() { p.sessions.put(rec) })
	return nil
}

// endUserSessions deletes every session of the user a user.removed or
// user.password_changed names: a removed account, or one whose password
// changed, keeps no session.
func (p *Projection) endUserSessions(tx *bolt.Tx, ev events.Envelope) error {
	var name string
	switch ev.Kind {
	case events.KindUserPasswordChanged:
		var pl events.UserPasswordChanged
		if err := events.DecodeInto(ev, &pl); err != nil {
			return fmt.Errorf("access: applying seq %d: %w", ev.Seq, err)
		}
		name = pl.Name
	case events.KindUserRemoved:
		var pl events.UserRemoved
		if err := events.DecodeInto(ev, &pl); err != nil {
			return fmt.Errorf("access: applying seq %d: %w", ev.Seq, err)
		}
		name = pl.Name
	default:
		return nil
	}
	b := tx.Bucket(bSessions)
	if b == nil || name == "" {
		return nil
	}
	ended, err := deleteSessions(b, func(r sessionRec) bool { return r.User == name })
	if err != nil {
		return fmt.Errorf("access: applying seq %d: %w", ev.Seq, err)
	}
	if len(ended) > 0 {
		tx.OnCommit(func() { p.sessions.drop(ended...) })
	}
	return nil
}

// deleteSessions deletes the records match selects and returns their ids.
func deleteSessions(b *bolt.Bucket, match func(sessionRec) bool) ([]string, error) {
	var ids []string
	err := b.ForEach(func(k, v []byte) error {
		var r sessionRec
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("decoding session %q: %w", k, err)
		}
		if match(r) {
			ids = append(ids, string(k))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if err := b.Delete([]byte(id)); err != nil {
			return nil, fmt.Errorf("deleting session %q: %w", id, err)
		}
	}
	return ids, nil
}

// loadSessions rebuilds the in-memory sessions from the bucket.
func (p *Projection) loadSessions(tx *bolt.Tx) error {
	p.sessions.reset()
	b := tx.Bucket(bSessions)
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, v []byte) error {
		var r sessionRec
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("access: loading session %q: %w", k, err)
		}
		p.sessions.put(r)
		return nil
	})
}
