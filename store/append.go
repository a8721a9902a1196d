package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/jocasta/jocasta/events"
	bolt "go.etcd.io/bbolt"
)

// logFillPercent packs log pages nearly full: keys only ever grow, so the
// half-full pages of the default split would waste half the file.
const logFillPercent = 0.95

// request is one caller's Append or AppendFunc.
type request struct {
	items  []item                                       // Append: prepared envelopes
	decide func(tx *bolt.Tx) ([]events.Envelope, error) // AppendFunc
	done   chan result                                  // buffered, 1
}

type result struct {
	evs []events.Envelope
	err error
}

// Append stores evs at the end of the log and returns them as stored. It
// assigns Seq (gapless), fills ID when empty and Time when zero (now),
// stores Time in UTC, seals the hash chain, and returns only after the
// commit is on disk. Concurrent calls share one transaction and one fsync
// (group commit).
//
// Every envelope's Kind must be in the registry and V in 1..current; a bad
// envelope fails its own call only, before anything is queued. A ctx
// cancelled before the request is queued returns ctx.Err(); once queued
// the request completes, so its outcome is never in doubt.
func (s *Store) Append(ctx context.Context, evs ...events.Envelope) ([]events.Envelope, error) {
	if len(evs) == 0 {
		if s.isClosed() {
			return nil, fmt.Errorf("store: append: %w", ErrClosed)
		}
		return nil, nil
	}
	items := make([]item, len(evs))
	now := time.Now()
	for i, e := range evs {
		it, err := s.prepare(e, now)
		if err != nil {
			return nil, fmt.Errorf("store: append: %w", err)
		}
		items[i] = it
	}
	return s.submit(ctx, &request{items: items})
}

// AppendFunc decides and appends in one write transaction: decide runs
// inside the group-commit transaction, sees everything committed before
// it (and everything earlier requests of the same batch appended), and
// the envelopes it returns are appended in the same transaction. Nothing
// can change between what decide read and what is appended.
//
// decide should only read. If it does write (say a write model saved next
// to its events), those writes commit atomically with its envelopes.
//
// If decide returns an error (returned to the caller unwrapped) or an
// envelope that cannot be stored, or panics, the transaction is rolled
// back and the rest of the batch is retried without it: nothing of the
// failed call is written and the other callers still commit. Because of
// that retry, decide may run more than once and must not have effects
// outside the transaction. It must not block or do network I/O: every
// other appender waits for it.
func (s *Store) AppendFunc(ctx context.Context, decide func(tx *bolt.Tx) ([]events.Envelope, error)) ([]events.Envelope, error) {
	if decide == nil {
		return nil, errors.New("store: append: nil decide function")
	}
	return s.submit(ctx, &request{decide: decide})
}

// submit queues r and waits for its result.
func (s *Store) submit(ctx context.Context, r *request) ([]events.Envelope, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.done = make(chan result, 1)
	if s.readOnly {
		return nil, fmt.Errorf("store: append: %w", ErrReadOnly)
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("store: append: %w (%v)", ErrFailed, err)
	}
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return nil, fmt.Errorf("store: append: %w", ErrClosed)
	}
	select {
	case s.reqs <- r:
		s.closeMu.RUnlock()
	case <-ctx.Done():
		s.closeMu.RUnlock()
		return nil, ctx.Err()
	}
	res := <-r.done // queued: wait for the commit whatever ctx says
	return res.evs, res.err
}

// item is an envelope ready for the writer: validated, ID and Time
// filled, and its canonical bytes but for seq and prev_hash encoded (by
// the caller's goroutine, so the writer only splices and hashes).
type item struct {
	e    events.Envelope
	body []byte // canonical bytes from after the seq value to before "prev_hash"; nil: encode in full
	// pre and post are set for a large payload spliced as it is (a flow
	// window's: megabytes; see split): the canonical bytes from after the
	// seq value to before "prev_hash" are pre, e.Payload and post, and the
	// payload is stored from where it is, never copied into a body or a
	// value (body is nil).
	pre, post []byte
}

// split reports whether the item's payload is spliced (pre is never empty then:
// it holds the fields after seq).
func (it *item) split() bool { return it.pre != nil }

// prepare validates e and fills ID and Time. It does not touch Seq or
// the hashes, which the writer sets.
func (s *Store) prepare(e events.Envelope, now time.Time) (item, error) {
	spec, ok := s.reg.Lookup(e.Kind)
	if !ok {
		return item{}, fmt.Errorf("kind %q: %w", e.Kind, ErrUnknownKind)
	}
	if e.V < 1 || e.V > spec.Version {
		return item{}, fmt.Errorf("%s v%d (this build knows v1..v%d): %w: %w", e.Kind, e.V, spec.Version, ErrBadEnvelope, events.ErrUnknownVersion)
	}
	for _, f := range [...]string{e.ID, e.Source, e.Actor, e.Device, e.Stream} {
		// Invalid UTF-8 would be stored as U+FFFD escapes that decode to
		// a different string, so the event would never verify.
		if !utf8.ValidString(f) {
			return item{}, fmt.Errorf("%s: a field is not valid UTF-8: %w", e.Kind, ErrBadEnvelope)
		}
	}
	if len(e.Payload) == 0 {
		e.Payload = json.RawMessage("null") // what the hash covers and a read returns
	} else if !utf8.Valid(e.Payload) {
		return item{}, fmt.Errorf("%s: payload is not valid UTF-8: %w", e.Kind, ErrBadEnvelope)
	}
	if e.ID == "" {
		e.ID = events.NewID()
	}
	if e.Time.IsZero() {
		e.Time = now
	}
	e.Time = e.Time.UTC()
	if y := e.Time.Year(); y < 0 || y > 9999 {
		return item{}, fmt.Errorf("%s: time %s outside years 0..9999: %w", e.Kind, e.Time, ErrBadEnvelope)
	}
	it := item{e: e}
	if it.pre, it.post = canonicalSplit(e); it.split() {
		return it, nil
	}
	body, err := canonicalBody(e)
	if err != nil {
		return item{}, fmt.Errorf("%s: %w: %w", e.Kind, ErrBadEnvelope, err) // payload is not JSON
	}
	it.body = body
	return it, nil
}

const (
	canonicalHead = `{"seq":`
	prevField     = `"prev_hash":"`
)

// canonicalBody encodes e's canonical bytes with seq 0 and the zero
// hash and cuts out what lies between the two, which the writer splices
// around the real seq and prev_hash. It returns nil (encode in full) if
// the layout is not the one expected: seq first, prev_hash last.
func canonicalBody(e events.Envelope) ([]byte, error) {
	e.Seq, e.PrevHash = 0, events.ZeroHash
	c, err := e.CanonicalBytes()
	if err != nil {
		return nil, err
	}
	head, tail := canonicalHead+"0", prevField+events.ZeroHash+`"}`
	if !bytes.HasPrefix(c, []byte(head+",")) || !bytes.HasSuffix(c, []byte(tail)) {
		return nil, nil
	}
	return c[len(head) : len(c)-len(tail)], nil
}

// canonicalSplit is canonicalBody for a payload large enough to splice:
// the bytes before and after the payload, between the seq value and
// "prev_hash"; nil when the payload is not spliced or the layout is not
// the one expected (canonicalBody then encodes it).
func canonicalSplit(e events.Envelope) (pre, post []byte) {
	e.Seq, e.PrevHash = 0, events.ZeroHash
	p, q, ok := e.CanonicalSplit()
	head, tail := canonicalHead+"0", prevField+events.ZeroHash+`"}`
	if !ok || !bytes.HasPrefix(p, []byte(head+",")) || !bytes.HasSuffix(q, []byte(tail)) {
		return nil, nil
	}
	return p[len(head):], q[:len(q)-len(tail)]
}

// writer is the one goroutine that commits: it takes whatever is queued
// (up to maxB requests, never waiting for more) and commits it in one
// transaction, until Close closes the queue and it has drained it.
func (s *Store) writer() {
	defer close(s.done)
	batch := make([]*request, 0, s.maxB)
	for {
		r, ok := <-s.reqs
		if !ok {
			return
		}
		batch = append(batch[:0], r)
		open := true
	fill:
		for len(batch) < s.maxB {
			select {
			case r, ok := <-s.reqs:
				if !ok {
					open = false
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		s.commit(batch)
		clear(batch)
		if !open {
			return
		}
	}
}

// errAbort rolls a batch transaction back so that it can be retried
// without the request that failed.
var errAbort = errors.New("abort batch")

// chain is the tip of the chain while a transaction appends.
type chain struct {
	seq  uint64
	hash string
	raw  [sha256.Size]byte
}

// commit writes one batch. A request whose decide or envelopes fail is
// answered with its error and the batch is retried without it.
func (s *Store) commit(batch []*request) {
	pending := batch
	for len(pending) > 0 {
		var (
			results []result
			failed  = -1
			failErr error
		)
		s.writeMu.Lock()
		if err := s.Err(); err != nil {
			s.writeMu.Unlock()
			err = fmt.Errorf("store: append: %w (%v)", ErrFailed, err)
			for _, r := range pending {
				r.done <- result{err: err}
			}
			return
		}
		tip := chain{seq: s.head.Load(), hash: s.headHash}
		copy(tip.raw[:], hashBytes(tip.hash))
		began := time.Now()
		err := s.update(func(tx *bolt.Tx) error {
			results = make([]result, len(pending))
			lb := tx.Bucket(bLog)
			lb.FillPercent = logFillPercent
			now := time.Now()
			for i, r := range pending {
				items, err := s.resolve(tx, r, now)
				var evs []events.Envelope
				if err == nil {
					evs, err = appendTx(lb, &tip, items)
				}
				if err != nil {
					failed, failErr = i, err
					return errAbort
				}
				results[i].evs = evs
			}
			meta := tx.Bucket(bMeta)
			if err := meta.Put(metaHead, seqKey(tip.seq)); err != nil {
				return err
			}
			return meta.Put(metaHeadHash, []byte(tip.hash))
		})
		if err == nil {
			moved := tip.seq != s.head.Load()
			if obs := s.commitObserver.Load(); obs != nil && moved {
				(*obs)(int(tip.seq-s.head.Load()), time.Since(began))
			}
			s.headHash = tip.hash
			s.head.Store(tip.seq)
			s.writeMu.Unlock()
			for i, r := range pending {
				r.done <- results[i]
			}
			if moved {
				s.runHooks(tip.seq)
			}
			return
		}
		s.writeMu.Unlock()
		if errors.Is(err, errAbort) && failed >= 0 {
			pending[failed].done <- result{err: failErr}
			pending = append(pending[:failed:failed], pending[failed+1:]...)
			continue
		}
		// The commit failed (a write or fsync error): what reached the
		// disk is unknown, and bbolt's state is no longer to be trusted.
		err = s.commitFailed("append", err)
		for _, r := range pending {
			r.done <- result{err: err}
		}
		return
	}
}

// resolve returns the items r appends: Append's prepared ones, or what
// decide returns, prepared.
func (s *Store) resolve(tx *bolt.Tx, r *request, now time.Time) ([]item, error) {
	if r.decide == nil {
		return r.items, nil
	}
	evs, err := callDecide(r.decide, tx)
	if err != nil {
		return nil, err
	}
	out := make([]item, len(evs))
	for i, e := range evs {
		it, err := s.prepare(e, now)
		if err != nil {
			return nil, fmt.Errorf("store: append: %w", err)
		}
		out[i] = it
	}
	return out, nil
}

// callDecide runs decide, turning a panic into an error for its caller.
func callDecide(decide func(*bolt.Tx) ([]events.Envelope, error), tx *bolt.Tx) (evs []events.Envelope, err error) {
	defer func() {
		if r := recover(); r != nil {
			evs, err = nil, fmt.Errorf("store: append: decide panicked: %v", r)
		}
	}()
	return decide(tx)
}

// appendTx seals items onto the chain at tip, puts them in lb and
// returns the stored envelopes. items keep what sealing them again takes
// (a retried batch): only a large body is dropped, and such an item is
// then encoded in full.
func appendTx(lb *bolt.Bucket, tip *chain, items []item) ([]events.Envelope, error) {
	out := make([]events.Envelope, len(items))
	for i, it := range items {
		seq, err := lb.NextSequence()
		if err != nil {
			return nil, fmt.Errorf("store: append: next sequence: %w", err)
		}
		if seq != tip.seq+1 {
			return nil, fmt.Errorf("store: append: log sequence %d does not follow head %d: %w", seq, tip.seq, ErrCorrupt)
		}
		it.e.Seq = seq
		val, sum, err := seal(&it, tip.hash, tip.raw[:])
		if err != nil {
			return nil, fmt.Errorf("store: append: %w: %w", ErrBadEnvelope, err)
		}
		if len(it.body) >= dropBody {
			// Sealed into val, a large body (a large payload not spliced:
			// one with whitespace, say) can go while the batch commits;
			// sealed again (a retried batch), the item is encoded in full.
			// A split item has no body to drop: its payload is the
			// event's own.
			items[i].body = nil
		}
		if err := putLogValue(lb.Tx(), lb, seqKey(seq), val); err != nil {
			return nil, fmt.Errorf("store: append seq %d: %w", seq, err)
		}
		out[i] = it.e
		tip.seq, tip.hash, tip.raw = seq, it.e.Hash, sum
	}
	return out, nil
}

// seal sets it.e's PrevHash and Hash (as events.Envelope.Seal would) and
// returns the value to store, which is byte for byte json.Marshal(it.e):
// the canonical bytes are that encoding without the trailing hash field.
// A split item's value is in three pieces, the middle one its payload
// where it is; any other's is one. It also returns the raw hash, the
// next event's prevRaw.
func seal(it *item, prev string, prevRaw []byte) (value, [sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	e := &it.e
	e.PrevHash = prev
	// The canonical bytes without the closing brace: c, then for a split
	// item the payload and tail.
	var c, tail []byte
	switch {
	case it.split():
		c = make([]byte, 0, len(canonicalHead)+20+len(it.pre))
		c = append(c, canonicalHead...)
		c = strconv.AppendUint(c, e.Seq, 10)
		c = append(c, it.pre...)
		tail = make([]byte, 0, len(it.post)+len(prevField)+len(prev)+len(hashField)+2*sha256.Size+4)
		tail = append(tail, it.post...)
		tail = append(tail, prevField...)
		tail = append(tail, prev...)
		tail = append(tail, '"')
	case it.body != nil:
		c = make([]byte, 0, len(it.body)+256)
		c = append(c, canonicalHead...)
		c = strconv.AppendUint(c, e.Seq, 10)
		c = append(c, it.body...)
		c = append(c, prevField...)
		c = append(c, prev...)
		c = append(c, '"')
	default:
		full, err := e.CanonicalBytes()
		if err != nil {
			return value{}, sum, err
		}
		c = append(make([]byte, 0, len(full)+128), full[:len(full)-1]...)
	}
	h := sha256.New()
	h.Write(prevRaw)
	h.Write(c)
	if it.split() {
		h.Write(e.Payload)
		h.Write(tail)
	}
	h.Write([]byte{'}'})
	h.Sum(sum[:0])
	e.Hash = hex.EncodeToString(sum[:])
	if it.split() {
		tail = append(tail, hashField...)
		tail = append(tail, e.Hash...)
		return value{c, e.Payload, append(tail, `"}`...)}, sum, nil
	}
	c = append(c, hashField...)
	c = append(c, e.Hash...)
	return value{append(c, `"}`...)}, sum, nil
}

// hashField opens the stored value's last field.
const hashField = `,"hash":"`

// dropBody is the size from which appendTx drops an item's body once
// sealed.
const dropBody = 64 << 10

// storedValue is the stored form of an event given its canonical bytes.
func storedValue(canonical []byte, hash string) []byte {
	v := make([]byte, 0, len(canonical)+len(hash)+10)
	v = append(v, canonical[:len(canonical)-1]...)
	v = append(v, hashField...)
	v = append(v, hash...)
	return append(v, `"}`...)
}

// commitFault, when set (by tests only), fails the write transaction of
// the writer's next batch with the error it returns, as a failed write
// or fsync would fail its commit.
var commitFault func() error

// update is db.Update for the writer's batches, with the test fault.
func (s *Store) update(fn func(*bolt.Tx) error) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		if commitFault != nil {
			return commitFault()
		}
		return nil
	})
}
