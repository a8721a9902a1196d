package access

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/jocasta/jocasta/events"
	bolt "go.etcd.io/bbolt"
)

// Bucket names. BucketTokens and BucketUsers are the projection's own
// (Buckets); BucketLastUsed is written by FlushLastUsed only and is not
// part of replays or snapshots.
const (
	BucketTokens   = "access_tokens"
	BucketUsers    = "access_users"
	BucketLastUsed = "token_last_used"
)

var (
	bTokens   = []byte(BucketTokens)
	bUsers    = []byte(BucketUsers)
	bLastUsed = []byte(BucketLastUsed)
)

// tokenRec is a token as stored in BucketTokens (key: token id).
type tokenRec struct {
	ID           string     `json:"id"`
	Name         string     `json:"name"`
	Mode         string     `json:"mode"`
	CreatedAt    time.Time  `json:"created_at"`
	ExpiresAt    *time.Time `json:"expires_at"`
	SecretSHA256 string     `json:"secret_sha256"`
	Revoked      bool       `json:"revoked"`
	RevokedAt    *time.Time `json:"revoked_at,omitempty"`
}

// userRec is an account as stored in BucketUsers (key: user name).
type userRec struct {
	Name              string     `json:"name"`
	PasswordHash      string     `json:"password_hash"`
	CreatedAt         time.Time  `json:"created_at"`
	PasswordChangedAt *time.Time `json:"password_changed_at,omitempty"`
}

// token is a listed (not revoked) token in memory. It is never changed
// after it is put in the maps; a change replaces it.
type token struct {
	rec tokenRec
	// hash is the decoded SecretSHA256; hashOK is false when the event
	// carried something else, and the token then never authenticates.
	hash   [32]byte
	hashOK bool
}

// Projection is the access read model. Create it with New; it is safe for
// concurrent use.
type Projection struct {
	now func() time.Time

	mu     sync.RWMutex
	tokens map[string]*token   // listed tokens by id
	byHash map[[32]byte]*token // listed tokens by secret hash
	users  map[string]*userRec // accounts by name

	luMu     sync.Mutex
	lastUsed map[string]time.Time // token id → last successful use
	dirty    map[string]struct{}  // ids whose lastUsed is not yet flushed
	// active is each session's last request (activity.go), activeDirty
	// the ids not yet flushed.
	active      map[string]time.Time
	activeDirty map[string]struct{}

	// hashing admits one password verification at a time (each one
	// allocates argon2's memory, 64 MiB by default).
	hashing chan struct{}

	sessions sessionSet // web sign-in sessions (sessions.go)
}

// New returns an empty projection. now is the clock that expiry and
// last_used_at are judged by (time.Now when nil); Apply never reads it.
func New(now func() time.Time) *Projection {
	if now == nil {
		now = time.Now
	}
	return &Projection{
		now:         now,
		tokens:      map[string]*token{},
		byHash:      map[[32]byte]*token{},
		users:       map[string]*userRec{},
		lastUsed:    map[string]time.Time{},
		dirty:       map[string]struct{}{},
		active:      map[string]time.Time{},
		activeDirty: map[string]struct{}{},
		hashing:     make(chan struct{}, 1),
	}
}

// Name is the projection's stable consumer name.
func (p *Projection) Name() string { return "access" }

// Version is the projection's schema version; a change rebuilds it.
func (p *Projection) Version() int { return 1 }

// Buckets are the buckets Apply writes.
func (p *Projection) Buckets() []string { return []string{BucketTokens, BucketUsers, BucketSessions} }

// Apply folds one event into the buckets in tx and, once tx commits, into
// memory. Kinds other than the token and account kinds are ignored. It is
// deterministic: it reads no clock, only the event.
func (p *Projection) Apply(tx *bolt.Tx, ev events.Envelope) error {
	switch ev.Kind {
	case events.KindTokenCreated:
		return p.applyTokenCreated(tx, ev)
	case events.KindTokenRevoked:
		return p.applyTokenRevoked(tx, ev)
	case events.KindUserAdded, events.KindUserPasswordChanged, events.KindUserRemoved:
		if err := p.applyUser(tx, ev); err != nil {
			return err
		}
		return p.endUserSessions(tx, ev)
	case events.KindSessionStarted, events.KindSessionEnded:
		return p.applySession(tx, ev)
	}
	return nil
}

func (p *Projection) applyTokenCreated(tx *bolt.Tx, ev events.Envelope) error {
	var pl events.TokenCreated
	if err := events.DecodeInto(ev, &pl); err != nil {
		return fmt.Errorf("access: applying seq %d: %w", ev.Seq, err)
	}
	if pl.TokenID == "" {
		return nil
	}
	b, err := tx.CreateBucketIfNotExists(bTokens)
	if err != nil {
		return fmt.Errorf("access: applying seq %d: bucket %s: %w", ev.Seq, BucketTokens, err)
	}
	if b.Get([]byte(pl.TokenID)) != nil {
		return nil // first token.created of an id wins
	}
	rec := tokenRec{
		ID: pl.TokenID, Name: pl.Name, Mode: pl.Mode,
		CreatedAt: ev.Time.UTC(), ExpiresAt: utcPtr(pl.ExpiresAt),
		SecretSHA256: pl.SecretSHA256,
	}
	if err := putJSON(b, rec.ID, rec); err != nil {
		return fmt.Errorf("access: applying seq %d: %w", ev.Seq, err)
	}
	tx.OnCommit(func() { p.setToken(rec) })
	return nil
}

func (p *Projection) applyTokenRevoked(tx *bolt.Tx, ev events.Envelope) error {
	var pl events.TokenRevoked
	if err := events.DecodeInto(ev, &pl); err != nil {
		return fmt.Errorf("access: applying seq %d: %w", ev.Seq, err)
	}
	b, err := tx.CreateBucketIfNotExists(bTokens)
	if err != nil {
		return fmt.Errorf("access: applying seq %d: bucket %s: %w", ev.Seq, BucketTokens, err)
	}
	var rec tokenRec
	ok, err := getJSON(b, pl.TokenID, &rec)
	if err != nil {
		return fmt.Errorf("access: applying seq %d: %w", ev.Seq, err)
	}
	if !ok || rec.Revoked {
		return nil
	}
	at := ev.Time.UTC()
	rec.Revoked, rec.RevokedAt = true, &at
	if err := putJSON(b, rec.ID, rec); err != nil {
		return fmt.Errorf("access: applying seq %d: %w", ev.Seq, err)
	}
	tx.OnCommit(func() { p.dropToken(rec.ID) })
	return nil
}

func (p *Projection) applyUser(tx *bolt.Tx, ev events.Envelope) error {
	b, err := tx.CreateBucketIfNotExists(bUsers)
	if err != nil {
		return fmt.Errorf("access: applying seq %d: bucket %s: %w", ev.Seq, BucketUsers, err)
	}
	var name string
	var hash string
	switch ev.Kind {
	case events.KindUserAdded:
		var pl events.UserAdded
		err = events.DecodeInto(ev, &pl)
		name, hash = pl.Name, pl.PasswordHash
	case events.KindUserPasswordChanged:
		var pl events.UserPasswordChanged
		err = events.DecodeInto(ev, &pl)
		name, hash = pl.Name, pl.PasswordHash
	default:
		var pl events.UserRemoved
		err = events.DecodeInto(ev, &pl)
		name = pl.Name
	}
	if err != nil {
		return fmt.Errorf("access: applying seq %d: %w", ev.Seq, err)
	}
	if name == "" {
		return nil
	}
	var rec userRec
	exists, err := getJSON(b, name, &rec)
	if err != nil {
		return fmt.Errorf("access: applying seq %d: %w", ev.Seq, err)
	}
	at := ev.Time.UTC()
	switch ev.Kind {
	case events.KindUserAdded:
		if exists {
			return nil
		}
		rec = userRec{Name: name, PasswordHash: hash, CreatedAt: at}
	case events.KindUserPasswordChanged:
		if !exists {
			return nil
		}
		rec.PasswordHash, rec.PasswordChangedAt = hash, &at
	default:
		if !exists {
			return nil
		}
		if err := b.Delete([]byte(name)); err != nil {
			return fmt.Errorf("access: applying seq %d: deleting user: %w", ev.Seq, err)
		}
		tx.OnCommit(func() { p.dropUser(name) })
		return nil
	}
	if err := putJSON(b, name, rec); err != nil {
		return fmt.Errorf("access: applying seq %d: %w", ev.Seq, err)
	}
	tx.OnCommit(func() { p.setUser(rec) })
	return nil
}

// Load rebuilds memory from the buckets in tx (and last_used_at from
// BucketLastUsed). Missing buckets are empty.
func (p *Projection) Load(tx *bolt.Tx) error {
	tokens := map[string]*token{}
	byHash := map[[32]byte]*token{}
	users := map[string]*userRec{}
	lastUsed := map[string]time.Time{}
	if b := tx.Bucket(bTokens); b != nil {
		err := b.ForEach(func(k, v []byte) error {
			var rec tokenRec
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("access: loading token %q: %w", k, err)
			}
			if !rec.Revoked {
				t := newToken(rec)
				tokens[rec.ID] = t
				if _, dup := byHash[t.hash]; t.hashOK && !dup {
					byHash[t.hash] = t
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if b := tx.Bucket(bUsers); b != nil {
		err := b.ForEach(func(k, v []byte) error {
			rec := new(userRec)
			if err := json.Unmarshal(v, rec); err != nil {
				return fmt.Errorf("access: loading user %q: %w", k, err)
			}
			users[rec.Name] = rec
			return nil
		})
		if err != nil {
			return err
		}
	}
	if b := tx.Bucket(bLastUsed); b != nil {
		err := b.ForEach(func(k, v []byte) error {
			var t time.Time
			if err := t.UnmarshalText(v); err != nil {
				return fmt.Errorf("access: loading last use of token %q: %w", k, err)
			}
			if _, listed := tokens[string(k)]; listed {
				lastUsed[string(k)] = t.UTC()
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := p.loadSessions(tx); err != nil {
		return err
	}
	active, activeDirty, err := p.loadActive(tx)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.tokens, p.byHash, p.users = tokens, byHash, users
	p.mu.Unlock()
	p.luMu.Lock()
	p.lastUsed, p.dirty = lastUsed, map[string]struct{}{}
	p.active, p.activeDirty = active, activeDirty
	p.luMu.Unlock()
	return nil
}

func newToken(rec tokenRec) *token {
	t := &token{rec: rec}
	if h, err := hex.DecodeString(rec.SecretSHA256); err == nil && len(h) == len(t.hash) {
		copy(t.hash[:], h)
		t.hashOK = true
	}
	return t
}

func (p *Projection) setToken(rec tokenRec) {
	t := newToken(rec)
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.tokens[rec.ID]; ok && old.hashOK && p.byHash[old.hash] == old {
		delete(p.byHash, old.hash)
	}
	p.tokens[rec.ID] = t
	if _, dup := p.byHash[t.hash]; t.hashOK && !dup {
		p.byHash[t.hash] = t
	}
}

func (p *Projection) dropToken(id string) {
	p.mu.Lock()
	if t, ok := p.tokens[id]; ok {
		delete(p.tokens, id)
		if t.hashOK && p.byHash[t.hash] == t {
			delete(p.byHash, t.hash)
		}
	}
	p.mu.Unlock()
	p.luMu.Lock()
	delete(p.lastUsed, id)
	delete(p.dirty, id)
	p.luMu.Unlock()
}

func (p *Projection) setUser(rec userRec) {
	p.mu.Lock()
	p.users[rec.Name] = &rec
	p.mu.Unlock()
}

func (p *Projection) dropUser(name string) {
	p.mu.Lock()
	delete(p.users, name)
	p.mu.Unlock()
}

func putJSON(b *bolt.Bucket, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding record %q: %w", key, err)
	}
	if err := b.Put([]byte(key), data); err != nil {
		return fmt.Errorf("writing record %q: %w", key, err)
	}
	return nil
}

// getJSON decodes the record at key into v; ok is false when there is none.
func getJSON(b *bolt.Bucket, key string, v any) (ok bool, err error) {
	if key == "" {
		return false, nil
	}
	data := b.Get([]byte(key))
	if data == nil {
		return false, nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("decoding record %q: %w", key, err)
	}
	return true, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
