package access

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"slices"
	"time"

	"github.com/jocasta/jocasta/projections"
	bolt "go.etcd.io/bbolt"
)

// Token states as listed.
const (
	StateActive  = "active"
	StateExpired = "expired"
)

// Authenticate returns the principal of a token secret. Every refusal
// (malformed, unknown, revoked or expired secret, or a token whose stored
// mode or hash is unusable) is projections.ErrInvalidToken, with nothing
// to tell them apart. A token expires at the instant of its expires_at,
// judged by the projection's clock. Success records last_used_at in memory
// (see FlushLastUsed). ctx is accepted for the callers' symmetry; the
// check does no I/O.
func (p *Projection) Authenticate(ctx context.Context, secret string) (projections.Principal, error) {
	_ = ctx
	if !wellFormedSecret(secret) {
		return projections.Principal{}, projections.ErrInvalidToken
	}
	sum := sha256.Sum256([]byte(secret))
	p.mu.RLock()
	t := p.byHash[sum]
	p.mu.RUnlock()
	if t == nil || !t.hashOK || subtle.ConstantTimeCompare(t.hash[:], sum[:]) != 1 {
		return projections.Principal{}, projections.ErrInvalidToken
	}
	now := p.now()
	if expired(t.rec, now) || ValidateMode(t.rec.Mode) != nil {
		return projections.Principal{}, projections.ErrInvalidToken
	}
	p.luMu.Lock()
	p.lastUsed[t.rec.ID] = now.UTC()
	p.dirty[t.rec.ID] = struct{}{}
	p.luMu.Unlock()
	return projections.Principal{TokenID: t.rec.ID, Name: t.rec.Name, Mode: t.rec.Mode}, nil
}

func expired(rec tokenRec, now time.Time) bool {
	return rec.ExpiresAt != nil && !now.Before(*rec.ExpiresAt)
}

// view is the listed form of a token; the caller holds luMu.
func (p *Projection) view(t *token, now time.Time) projections.Token {
	v := projections.Token{
		ID: t.rec.ID, Name: t.rec.Name, Mode: t.rec.Mode,
		CreatedAt: t.rec.CreatedAt, ExpiresAt: utcPtr(t.rec.ExpiresAt),
		State: StateActive,
	}
	if expired(t.rec, now) {
		v.State = StateExpired
	}
	if lu, ok := p.lastUsed[t.rec.ID]; ok {
		v.LastUsedAt = &lu
	}
	return v
}

// Tokens lists the tokens that are not revoked, oldest first (ties by
// id), with state "active" or "expired" as of now. It never returns a
// secret or hash.
func (p *Projection) Tokens(now time.Time) []projections.Token {
	p.mu.RLock()
	ts := make([]*token, 0, len(p.tokens))
	for _, t := range p.tokens {
		ts = append(ts, t)
	}
	p.mu.RUnlock()
	slices.SortFunc(ts, func(a, b *token) int {
		if c := a.rec.CreatedAt.Compare(b.rec.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.rec.ID, b.rec.ID)
	})
	out := make([]projections.Token, len(ts))
	p.luMu.Lock()
	defer p.luMu.Unlock()
	for i, t := range ts {
		out[i] = p.view(t, now)
	}
	return out
}

// Token returns one listed token, its state judged by the projection's
// clock, or an error wrapping projections.ErrNotFound for an unknown or
// revoked id.
func (p *Projection) Token(id string) (projections.Token, error) {
	p.mu.RLock()
	t, ok := p.tokens[id]
	p.mu.RUnlock()
	if !ok {
		return projections.Token{}, fmt.Errorf("access: token %q: %w", id, projections.ErrNotFound)
	}
	now := p.now()
	p.luMu.Lock()
	defer p.luMu.Unlock()
	return p.view(t, now), nil
}

// TokenNameTaken reports whether a listed token (active or expired, not
// revoked) already has exactly this name. Names are unique among listed
// tokens; the command that creates a token refuses a taken name.
func (p *Projection) TokenNameTaken(name string) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, t := range p.tokens {
		if t.rec.Name == name {
			return true
		}
	}
	return false
}

// FlushLastUsed writes the last_used_at values recorded since the last
// flush to BucketLastUsed (key: token id, value: RFC 3339 time), and the
// sessions' last requests to BucketSessionActive, in a transaction of
// db's (serve's store, whose failed commit fails the store). On failure
// the values stay pending for the next flush.
func (p *Projection) FlushLastUsed(db projections.DB) error {
	if db == nil {
		return fmt.Errorf("access: flushing token last use: no database")
	}
	p.luMu.Lock()
	pending := make(map[string]time.Time, len(p.dirty))
	for id := range p.dirty {
		pending[id] = p.lastUsed[id]
	}
	clear(p.dirty)
	active := p.activePending()
	p.luMu.Unlock()
	if len(pending) == 0 && len(active) == 0 {
		return nil
	}
	err := db.Update(func(tx *bolt.Tx) error {
		if err := putTimes(tx, bSessionActive, active); err != nil {
			return err
		}
		return putTimes(tx, bLastUsed, pending)
	})
	if err != nil {
		p.luMu.Lock()
		for id := range pending {
			if _, listed := p.lastUsed[id]; listed {
				p.dirty[id] = struct{}{}
			}
		}
		for id := range active {
			p.activeDirty[id] = struct{}{} // an ended one's entry goes next time
		}
		p.luMu.Unlock()
		return fmt.Errorf("access: flushing last use of %d tokens and %d sessions: %w", len(pending), len(active), err)
	}
	return nil
}

// RunFlusher calls FlushLastUsed every interval until ctx ends, then once
// more, and returns that last flush's error. A failed periodic flush keeps
// its values pending for the next one. It blocks; run it in a goroutine
// the caller waits for, before the database is closed.
func (p *Projection) RunFlusher(ctx context.Context, db projections.DB, every time.Duration) error {
	if every <= 0 {
		return fmt.Errorf("access: token last-use flusher: interval %v must be positive", every)
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return p.FlushLastUsed(db)
		case <-tick.C:
			_ = p.FlushLastUsed(db) // retried at the next tick and at the end
		}
	}
}
