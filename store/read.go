package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/jocasta/jocasta/events"
	bolt "go.etcd.io/bbolt"
)

// scanChunk is how many events Scan and Verify read per read transaction.
const scanChunk = 1024

// ChunkBytes bounds the stored bytes of the events a reader of the log
// holds at once (ReadChunk, Scan's chunks; see Span), but for a single
// event larger: 1,024 flow windows of megabytes each would be gigabytes.
const ChunkBytes = 8 << 20

// Head returns the seq of the last committed event, 0 for an empty log.
// It reads memory only.
func (s *Store) Head() uint64 { return s.head.Load() }

// First returns the seq of the first event present: 1, or after
// compaction the first one kept. First() > Head() means the log holds no
// events (new, or compacted through head).
func (s *Store) First() uint64 { return s.first.Load() }

// Read returns up to max events with seq >= from, ascending, in one short
// read transaction. A from before First starts at First. max must be
// positive.
func (s *Store) Read(from uint64, max int) ([]events.Envelope, error) {
	if s.isClosed() {
		return nil, fmt.Errorf("store: read: %w", ErrClosed)
	}
	var out []events.Envelope
	err := safeView(s.db, func(tx *bolt.Tx) error {
		var err error
		out, err = s.ReadTx(tx, from, max)
		return err
	})
	return out, err
}

// ReadAppend is Read that appends the events to dst and returns the
// extended slice: a caller reading into a slice it sized (or reuses)
// saves the allocation and the copy.
func (s *Store) ReadAppend(dst []events.Envelope, from uint64, max int) ([]events.Envelope, error) {
	if s.isClosed() {
		return dst, fmt.Errorf("store: read: %w", ErrClosed)
	}
	err := safeView(s.db, func(tx *bolt.Tx) error {
		var err error
		dst, _, err = readTx(tx, dst, from, max, 0)
		return err
	})
	return dst, err
}

// ReadChunk is ReadAppend bounded by ChunkBytes too: it stops before an
// event that would take what it read past ChunkBytes (each event at its
// stored length, an out-of-line one included), but reads at least one.
// more reports that the log goes on after the last event read, as it
// is in the read's transaction.
func (s *Store) ReadChunk(dst []events.Envelope, from uint64, max int) (out []events.Envelope, more bool, err error) {
	if s.isClosed() {
		return dst, false, fmt.Errorf("store: read: %w", ErrClosed)
	}
	err = safeView(s.db, func(tx *bolt.Tx) error {
		var err error
		dst, more, err = readTx(tx, dst, from, max, ChunkBytes)
		return err
	})
	return dst, more, err
}

// ReadTx is Read inside the caller's transaction. The envelopes are
// copies and stay valid after the transaction ends.
func (s *Store) ReadTx(tx *bolt.Tx, from uint64, max int) ([]events.Envelope, error) {
	out, _, err := readTx(tx, nil, from, max, 0)
	return out, err
}

// readTx appends up to max events from seq from on to out, and, when
// bytes is not 0, no more than fit in bytes (but at least one). more
// reports that the log holds an event after the last one read.
func readTx(tx *bolt.Tx, out []events.Envelope, from uint64, max int, bytes int64) (_ []events.Envelope, more bool, _ error) {
	if max <= 0 {
		return out, false, fmt.Errorf("store: read from %d: max %d must be positive", from, max)
	}
	lb := tx.Bucket(bLog)
	if lb == nil {
		return out, false, fmt.Errorf("store: read: bucket %q missing: %w", BucketLog, ErrCorrupt)
	}
	if last := lb.Sequence(); last >= from {
		out = slices.Grow(out, int(min(uint64(max), last-from+1)))
	}
	n0 := len(out)
	large := false
	defer func() {
		if large {
			_ = ReleaseMappedTx(tx) // copied out; a failure leaves pages mapped, nothing else
		}
	}()
	var total int64
	c := lb.Cursor()
	k, v := c.Seek(seqKey(from))
	for ; k != nil && len(out)-n0 < max; k, v = c.Next() {
		if total += storedLen(v); bytes > 0 && len(out) > n0 && total > bytes {
			break
		}
		seq, _ := keySeq(k)
		var prev *events.Envelope
		if len(out) > n0 {
			prev = &out[len(out)-1]
		}
		full, owned, err := logValue(tx, k, v)
		if err != nil {
			return out, false, fmt.Errorf("store: read seq %d: %w: %w", seq, ErrCorrupt, err)
		}
		e, err := decodeEnvelopeOwned(full, prev, owned)
		if err != nil {
			return out, false, fmt.Errorf("store: read seq %d: %w: %w", seq, ErrCorrupt, err)
		}
		large = large || len(full) >= largeValue
		out = append(out, e)
	}
	return out, k != nil, nil
}

// storedLen is the length of the value stored as v: v's, or the length
// its stub gives for one stored out of line (v's for a damaged stub,
// which reading the value reports).
func storedLen(v []byte) int64 {
	if isStub(v) {
		if n, err := stubLength(v); err == nil {
			return int64(n)
		}
	}
	return int64(len(v))
}

// Span returns how many events from seq from on, at most most, are
// stored in at most bytes (each value at its whole length, an
// out-of-line one included), and at least one when the log holds seq
// from. It reads the values' lengths, not the values: a reader sizes a
// batch by it before decoding any (a flow window's event is megabytes,
// a sweep's kilobytes).
func (s *Store) Span(from uint64, most int, bytes int64) (int, error) {
	if s.isClosed() {
		return 0, fmt.Errorf("store: span: %w", ErrClosed)
	}
	n := 0
	err := safeView(s.db, func(tx *bolt.Tx) error {
		var total int64
		c := tx.Bucket(bLog).Cursor()
		for k, v := c.Seek(seqKey(from)); k != nil && n < most; k, v = c.Next() {
			if total += storedLen(v); n > 0 && total > bytes {
				break
			}
			n++
		}
		return nil
	})
	return n, err
}

// Get returns the event at seq, or an error wrapping ErrNotFound.
func (s *Store) Get(seq uint64) (events.Envelope, error) {
	if s.isClosed() {
		return events.Envelope{}, fmt.Errorf("store: get seq %d: %w", seq, ErrClosed)
	}
	var e events.Envelope
	err := safeView(s.db, func(tx *bolt.Tx) error {
		k := seqKey(seq)
		v := tx.Bucket(bLog).Get(k)
		if v == nil {
			return fmt.Errorf("store: get seq %d: %w", seq, ErrNotFound)
		}
		full, owned, err := logValue(tx, k, v)
		if err != nil {
			return fmt.Errorf("store: get seq %d: %w: %w", seq, ErrCorrupt, err)
		}
		if e, err = decodeEnvelopeOwned(full, nil, owned); err != nil {
			return fmt.Errorf("store: get seq %d: %w: %w", seq, ErrCorrupt, err)
		}
		return nil
	})
	return e, err
}

// Scan calls fn for every event with seq >= from, in order, reading in
// chunks with short read transactions (fn runs outside any transaction)
// of at most scanChunk events and ChunkBytes.
// It stops at the end of the log as it is when it gets there, at ctx's
// end (returning ctx.Err()) or at fn's first error, which it returns as
// is.
func (s *Store) Scan(ctx context.Context, from uint64, fn func(events.Envelope) error) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk, more, err := s.ReadChunk(nil, from, scanChunk)
		if err != nil {
			return err
		}
		for _, e := range chunk {
			if err := fn(e); err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if !more {
			return nil
		}
		from = chunk[len(chunk)-1].Seq + 1
	}
}
