package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// VerifyReport is what Verify found. OK is true when every event from
// First to Head is present, stored under its own seq, links to the one
// before it (or to the compaction anchor) and hashes to its stored hash.
// Otherwise FirstBad is the first seq that fails and Reason says why.
type VerifyReport struct {
	First, Head, Checked uint64
	OK                   bool
	FirstBad             uint64
	Reason               string
}

// Verify walks the whole chain from the compaction anchor (or ZeroHash),
// in chunks with short read transactions, recomputing every hash. It
// checks for gaps, key/seq agreement, prev_hash links, hashes, that each
// stored value is exactly the canonical encoding (so an added field is
// caught even though it would not change the hash), and that the last
// event matches the head recorded in meta, and that every part of an
// out-of-line value belongs to an event of the chain stored out of line
// (parts the log does not point to are damage or additions; their seq is
// reported). It reports the first bad seq.
// progress, if not nil, is called after each chunk with the number of
// events checked. The error is for I/O and ctx only: a broken chain is a
// report with OK false.
func (s *Store) Verify(ctx context.Context, progress func(checked uint64)) (VerifyReport, error) {
	if s.isClosed() {
		return VerifyReport{}, fmt.Errorf("store: verify: %w", ErrClosed)
	}
	s.compactMu.RLock()
	defer s.compactMu.RUnlock()

	var (
		rep      VerifyReport
		expected uint64 // next seq the chain needs
		prev     string // hash the next event must link to
		prevRaw  [sha256.Size]byte
		next     []byte // key to resume at
		done     bool
	)
	err := s.db.View(func(tx *bolt.Tx) error {
		a, err := decodeAnchor(tx.Bucket(bMeta).Get(metaAnchor))
		if err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		rep.First = a.Seq + 1
		expected, prev = a.Seq+1, a.Hash
		copy(prevRaw[:], hashBytes(a.Hash))
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("store: verify: %w", err)
	}
	next = seqKey(0)
	bad := func(seq uint64, format string, args ...any) {
		rep.FirstBad, rep.Reason, done = seq, fmt.Sprintf(format, args...), true
	}

	for !done {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		err := safeView(s.db, func(tx *bolt.Tx) error {
			meta := tx.Bucket(bMeta)
			head, _ := u64(meta.Get(metaHead))
			headHash := string(meta.Get(metaHeadHash))
			rep.Head = head
			c := tx.Bucket(bLog).Cursor()
			n, read := 0, 0
			k, v := c.Seek(next)
			// A chunk ends at scanChunk events or ChunkBytes: a read
			// transaction held while a thousand flow windows are hashed
			// would hold back the writer's remap of a growing file.
			for ; k != nil && n < scanChunk && read < ChunkBytes; k, v = c.Next() {
				n++
				seq, ok := keySeq(k)
				switch {
				case !ok:
					bad(expected, "malformed key %x where seq %d belongs", k, expected)
				case seq < expected:
					bad(seq, "event %d is at or below the compaction anchor %d", seq, rep.First-1)
				case seq > expected:
					bad(expected, "missing: the log jumps from %d to %d", expected-1, seq)
				default:
					full, _, err := logValue(tx, k, v)
					if err != nil {
						bad(seq, "%v", err)
						break
					}
					read += len(full)
					h, reason := checkEvent(seq, full, prev, prevRaw[:])
					if reason != "" {
						bad(seq, "%s", reason)
						break
					}
					prev, prevRaw = h.hash, h.raw
					expected++
					rep.Checked++
				}
				if done {
					return nil
				}
			}
			if k != nil {
				next = append(next[:0], k...)
				return nil
			}
			// End of the log in this transaction: it must be meta's head.
			last := expected - 1
			switch {
			case last < head:
				bad(expected, "missing: meta records head %d but the log ends at %d", head, last)
			case last > head:
				bad(head+1, "event %d is beyond the head %d recorded in meta", head+1, head)
			case prev != headHash:
				bad(last, "hash of event %d does not match the head hash recorded in meta", last)
			}
			done = true
			return nil
		})
		if errors.Is(err, ErrCorrupt) && !done {
			// bbolt faulted on a damaged page while reading this chunk.
			bad(expected, "damaged page in the file at or after this seq (%s)", strings.TrimPrefix(err.Error(), ErrCorrupt.Error()+": "))
			err = nil
		}
		if err != nil {
			return rep, fmt.Errorf("store: verify: %w", err)
		}
		if progress != nil {
			progress(rep.Checked)
		}
	}
	if rep.Reason == "" {
		seq, reason, err := s.strayParts(ctx, scanChunk)
		if err != nil {
			return rep, fmt.Errorf("store: verify: %w", err)
		}
		if reason != "" {
			bad(seq, "%s", reason)
		}
	}
	rep.OK = rep.Reason == ""
	return rep, nil
}

type chainHash struct {
	hash string
	raw  [sha256.Size]byte
}

// checkEvent checks one stored value against the chain; reason is empty
// when it is sound.
func checkEvent(seq uint64, v []byte, prev string, prevRaw []byte) (chainHash, string) {
	var h chainHash
	e, err := decodeEnvelope(v)
	if err != nil {
		return h, fmt.Sprintf("stored value does not decode: %v", err)
	}
	if e.Seq != seq {
		return h, fmt.Sprintf("stored under key %d but says seq %d", seq, e.Seq)
	}
	if e.PrevHash != prev {
		return h, fmt.Sprintf("prev_hash does not link to the hash of seq %d", seq-1)
	}
	c, err := e.CanonicalBytes()
	if err != nil {
		return h, fmt.Sprintf("canonical bytes: %v", err)
	}
	sum := sha256.New()
	sum.Write(prevRaw)
	sum.Write(c)
	sum.Sum(h.raw[:0])
	h.hash = hex.EncodeToString(h.raw[:])
	if h.hash != e.Hash {
		return h, "hash mismatch: the event's content was altered"
	}
	if !bytes.Equal(storedValue(c, e.Hash), v) {
		return h, "stored bytes are not the canonical encoding of the event"
	}
	return h, ""
}

// strayParts looks for parts of out-of-line values that no stub in the
// log points to (an event's own parts were checked with its value). It
// visits one part key a value, each found by a seek (a leaf page a
// value, not its parts), chunk values a read transaction. A stub and
// its parts are written and compacted in one transaction, so each seq is
// seen whole whatever the transaction. reason is empty when there are
// none.
func (s *Store) strayParts(ctx context.Context, chunk int) (seq uint64, reason string, err error) {
	var next []byte
	for done := false; !done; {
		if err := ctx.Err(); err != nil {
			return 0, "", err
		}
		done = true
		err := safeView(s.db, func(tx *bolt.Tx) error {
			pb := tx.Bucket(bLogParts)
			if pb == nil {
				return nil
			}
			lb := tx.Bucket(bLog)
			c := pb.Cursor()
			k, _ := c.Seek(next)
			for n := 0; k != nil; n++ {
				if n == chunk {
					next, done = bytes.Clone(k), false
					return nil
				}
				if len(k) != 12 {
					seq, reason = 0, fmt.Sprintf("malformed part key %x in %q", k, BucketLogParts)
					return nil
				}
				seq, _ = keySeq(k[:8])
				if !isStub(lb.Get(k[:8])) {
					reason = fmt.Sprintf("%q holds parts under seq %d, which the log does not store out of line (damage, or added)", BucketLogParts, seq)
					return nil
				}
				if seq == math.MaxUint64 {
					return nil
				}
				k, _ = c.Seek(seqKey(seq + 1))
			}
			return nil
		})
		if err != nil || reason != "" {
			return seq, reason, err
		}
	}
	return 0, "", nil
}
