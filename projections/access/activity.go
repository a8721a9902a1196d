package access

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// BucketSessionActive holds each web session's last request (key:
// session id, value: RFC 3339 time). Like BucketLastUsed it is written by
// FlushLastUsed only, outside the log: replays and snapshots ignore it.
const BucketSessionActive = "session_last_active"

var bSessionActive = []byte(BucketSessionActive)

// TouchSession records a request of session id at now and reports
// whether the session had been idle for longer than timeout before it;
// the caller then ends the session (and the request is not recorded).
//
// The last request is kept in memory and written to BucketSessionActive
// with the tokens' last use (FlushLastUsed), so an idle time outlives a
// restart: after one it counts from the last flushed request, up to one
// flush interval earlier than the real one (a session may end that much
// sooner, never later). A session with no recorded request counts from
// its start.
func (p *Projection) TouchSession(id string, now time.Time, timeout time.Duration) (idle bool) {
	sess, listed := p.SessionByID(id)
	p.luMu.Lock()
	defer p.luMu.Unlock()
	last, ok := p.active[id]
	if !ok && listed {
		last, ok = sess.StartedAt, true
	}
	if ok && now.Sub(last) > timeout {
		return true
	}
	p.active[id] = now.UTC()
	p.activeDirty[id] = struct{}{}
	return false
}

// putTimes writes times under their ids into tx's bucket name (RFC 3339
// text), created when missing; a zero time deletes its id.
func putTimes(tx *bolt.Tx, name []byte, times map[string]time.Time) error {
	if len(times) == 0 {
		return nil
	}
	b, err := tx.CreateBucketIfNotExists(name)
	if err != nil {
		return err
	}
	for id, t := range times {
		if t.IsZero() {
			if err := b.Delete([]byte(id)); err != nil {
				return err
			}
			continue
		}
		v, err := t.MarshalText()
		if err != nil {
			return err
		}
		if err := b.Put([]byte(id), v); err != nil {
			return err
		}
	}
	return nil
}

// activePending takes the changed last requests (zero: the session has
// ended and its entry goes). The caller holds luMu.
func (p *Projection) activePending() map[string]time.Time {
	pending := make(map[string]time.Time, len(p.activeDirty))
	for id := range p.activeDirty {
		pending[id] = p.active[id]
	}
	clear(p.activeDirty)
	for id := range p.active {
		if _, listed := p.SessionByID(id); !listed {
			delete(p.active, id)
			pending[id] = time.Time{}
		}
	}
	return pending
}

// loadActive reads BucketSessionActive for the listed sessions; entries
// of sessions that have ended are marked to be removed at the next flush.
func (p *Projection) loadActive(tx *bolt.Tx) (active map[string]time.Time, dirty map[string]struct{}, err error) {
	active, dirty = map[string]time.Time{}, map[string]struct{}{}
	b := tx.Bucket(bSessionActive)
	if b == nil {
		return active, dirty, nil
	}
	err = b.ForEach(func(k, v []byte) error {
		if _, listed := p.SessionByID(string(k)); !listed {
			dirty[string(k)] = struct{}{}
			return nil
		}
		var t time.Time
		if err := t.UnmarshalText(v); err != nil {
			return fmt.Errorf("access: loading last request of session %q: %w", k, err)
		}
		active[string(k)] = t.UTC()
		return nil
	})
	return active, dirty, err
}
