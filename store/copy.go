package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jocasta/jocasta/events"
	bolt "go.etcd.io/bbolt"
)

// CopyLog copies this log into dst, which must hold no events: the
// compaction anchor, then the events from First on whose Time is at or
// before until (all when until is zero), stopping at the first event
// after until so the copy stays one gapless chain. Keys and stored bytes
// are copied exactly, so seqs, ids and hashes are preserved and dst
// verifies. Snapshots between the anchor and the last copied seq are
// copied too, so a compacted log can still be replayed from dst. Appends
// to dst wait until the copy ends; the source may keep appending.
func (s *Store) CopyLog(dst *Store, until time.Time) (copied uint64, err error) {
	return s.CopyLogFunc(dst, until, nil)
}

// CopyLogFunc copies in transactions of up to fnChunk events and hands
// them to fn in parts of up to fnPart; both also end once their stored
// bytes reach fnChunkBytes and fnPartBytes, so that a log of large
// events (a sweep of 1,000 hosts is about 20 KB) is not held a gigabyte
// at a time.
const (
	fnChunk = 32768
	fnPart  = 8192
)

// The byte bounds are variables for tests.
var (
	fnChunkBytes = 64 << 20
	fnPartBytes  = 16 << 20
)

// CopyLogFunc is CopyLog that also hands every event it copies to fn, in
// order, in parts of up to 8,192 events, as it reads them: the events are
// decoded as Read decodes them, so a caller that needs them (replay)
// reads the log once instead of twice. The copy commits to dst in
// transactions of up to 32,768 events, so dst's head may be behind the
// events fn has seen; it is at the last of them when CopyLogFunc returns
// without error. fn runs inside a read transaction on this store and
// must not write to dst's log; it may write to dst's other buckets, and
// those transactions interleave with the copy's (few, big) ones. An
// error from fn stops the copy before the events of that transaction
// are committed and is returned as is. A nil fn is CopyLog.
func (s *Store) CopyLogFunc(dst *Store, until time.Time, fn func(evs []events.Envelope) error) (copied uint64, err error) {
	if dst == s {
		return 0, errors.New("store: copy log: destination is the source")
	}
	if s.isClosed() || dst.isClosed() {
		return 0, fmt.Errorf("store: copy log: %w", ErrClosed)
	}
	s.compactMu.RLock()
	defer s.compactMu.RUnlock()
	dst.writeMu.Lock()
	defer dst.writeMu.Unlock()
	if dst.Head() != 0 || dst.First() != 1 {
		return 0, fmt.Errorf("store: copy log into %s: destination is not empty (head %d)", dst.path, dst.Head())
	}

	var a anchor
	err = s.db.View(func(tx *bolt.Tx) error {
		var err error
		a, err = decodeAnchor(tx.Bucket(bMeta).Get(metaAnchor))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: copy log: %w: %w", ErrCorrupt, err)
	}
	tip := anchor{Seq: a.Seq, Hash: a.Hash}
	if err := dst.db.Update(func(tx *bolt.Tx) error { return putTip(tx, tip, a) }); err != nil {
		return 0, fmt.Errorf("store: copy log into %s: %w", dst.path, err)
	}
	dst.first.Store(a.Seq + 1)
	dst.head.Store(tip.Seq)
	dst.headHash = tip.Hash

	// Each chunk is read in a read transaction on the source and written,
	// straight from the source's pages, in one write transaction on dst
	// inside it: the stored bytes are not copied in memory, but for the
	// out-of-line values, put back together on the heap (so a chunk also
	// ends at fnChunkBytes).
	chunk := scanChunk
	if fn != nil {
		// Fewer, bigger transactions: fn's caller (replay) writes to dst
		// too, and each of the copy's transactions waits for its own.
		chunk = fnChunk
	}
	var keys, vals [][]byte
	for stop := false; !stop; {
		keys, vals = keys[:0], vals[:0]
		var evs []events.Envelope // for fn
		if fn != nil {
			evs = make([]events.Envelope, 0, chunk)
		}
		next := tip
		var nextHash []byte // next.Hash, while it points into the source's pages
		var dstErr, fnErr error
		handed := 0             // events of evs handed to fn
		size, partBytes := 0, 0 // stored bytes of the chunk, and of the part not handed yet
		hand := func() bool {
			if handed < len(evs) {
				fnErr = fn(evs[handed:len(evs):len(evs)])
				handed, partBytes = len(evs), 0
			}
			return fnErr == nil
		}
		full := func() bool { return len(keys) >= chunk || size >= fnChunkBytes }
		err := s.db.View(func(tx *bolt.Tx) error {
			c := tx.Bucket(bLog).Cursor()
			k, v := c.Seek(seqKey(tip.Seq + 1))
			for ; k != nil && !full(); k, v = c.Next() {
				// An out-of-line value whole (on the heap), as it is put
				// into the destination.
				v, _, err := logValue(tx, k, v)
				if err != nil {
					return fmt.Errorf("seq %x: %w: %w", k, ErrCorrupt, err)
				}
				// The event's seq, time and link, and its hash for the next.
				var (
					seq    uint64
					at     time.Time
					linked bool
					hash   []byte // when fn is nil; else evs' last has it
				)
				if fn == nil {
					l, err := decodeLink(v)
					if err != nil {
						return fmt.Errorf("seq %x: %w: %w", k, ErrCorrupt, err)
					}
					seq, at, hash = l.seq, l.time, l.hash
					if nextHash != nil {
						linked = bytes.Equal(l.prev, nextHash)
					} else {
						linked = string(l.prev) == next.Hash
					}
				} else {
					var prev *events.Envelope
					if len(evs) > 0 {
						prev = &evs[len(evs)-1]
					}
					e, err := decodeEnvelopeReuse(v, prev)
					if err != nil {
						return fmt.Errorf("seq %x: %w: %w", k, ErrCorrupt, err)
					}
					seq, at = e.Seq, e.Time
					if nextHash != nil {
						linked = e.PrevHash == string(nextHash)
					} else {
						linked = e.PrevHash == next.Hash
					}
					evs = append(evs, e)
				}
				if kseq, _ := keySeq(k); kseq != next.Seq+1 || seq != kseq || !linked {
					return fmt.Errorf("chain broken at seq %d (run jocasta log verify): %w", next.Seq+1, ErrCorrupt)
				}
				if !until.IsZero() && at.After(until) {
					if fn != nil {
						evs = evs[:len(evs)-1]
					}
					break
				}
				keys, vals = append(keys, k), append(vals, v)
				size, partBytes = size+len(v), partBytes+len(v)
				next.Seq, nextHash = seq, hash
				if fn != nil {
					next.Hash = evs[len(evs)-1].Hash
					if (len(evs)-handed >= fnPart || partBytes >= fnPartBytes) && !hand() {
						return nil
					}
				}
			}
			if fn != nil && !hand() {
				return nil
			}
			// A chunk cut short by until (or the end of the log) is the last.
			stop = k == nil || !full()
			if len(keys) == 0 {
				return nil
			}
			if nextHash != nil {
				next.Hash = string(nextHash)
			}
			dstErr = dst.db.Update(func(dtx *bolt.Tx) error {
				lb := dtx.Bucket(bLog)
				lb.FillPercent = logFillPercent
				for i := range keys {
					if err := putLogValue(dtx, lb, keys[i], value{vals[i]}); err != nil {
						return err
					}
				}
				return putTip(dtx, next, a)
			})
			return nil
		})
		if err != nil {
			return copied, fmt.Errorf("store: copy log: %w", err)
		}
		if fnErr != nil {
			return copied, fnErr
		}
		if dstErr != nil {
			return copied, fmt.Errorf("store: copy log into %s: %w", dst.path, dstErr)
		}
		if len(keys) == 0 {
			break
		}
		copied += uint64(len(keys))
		tip = next
		dst.head.Store(tip.Seq)
		dst.headHash = tip.Hash
	}

	if err := s.copySnapshots(dst, a.Seq, tip.Seq); err != nil {
		return copied, err
	}
	if copied > 0 {
		dst.runHooks(tip.Seq)
	}
	return copied, nil
}

// putTip records head, head hash, log sequence and (after compaction)
// the anchor in a destination transaction.
func putTip(tx *bolt.Tx, tip, a anchor) error {
	meta := tx.Bucket(bMeta)
	if a.Seq > 0 {
		ab, err := json.Marshal(a)
		if err != nil {
			return err
		}
		if err := meta.Put(metaAnchor, ab); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bLog).SetSequence(tip.Seq); err != nil {
		return err
	}
	if err := meta.Put(metaHead, seqKey(tip.Seq)); err != nil {
		return err
	}
	return meta.Put(metaHeadHash, []byte(tip.Hash))
}

// copySnapshots copies the stored snapshots with from <= Seq <= to.
func (s *Store) copySnapshots(dst *Store, from, to uint64) error {
	// Every value of a snapshot's bucket: its info, and its data in one
	// value or in pieces.
	type snap struct {
		key  []byte
		vals [][]byte // key, value, key, value...
	}
	var snaps []snap
	err := s.db.View(func(tx *bolt.Tx) error {
		sb := tx.Bucket(bSnapshots)
		return sb.ForEachBucket(func(k []byte) error {
			if n, ok := keySeq(k); ok && n >= from && n <= to {
				sn := snap{key: bytes.Clone(k)}
				err := sb.Bucket(k).ForEach(func(k, v []byte) error {
					sn.vals = append(sn.vals, bytes.Clone(k), bytes.Clone(v))
					return nil
				})
				snaps = append(snaps, sn)
				return err
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("store: copy snapshots: %w", err)
	}
	for _, sn := range snaps {
		err := dst.db.Update(func(tx *bolt.Tx) error {
			sb := tx.Bucket(bSnapshots)
			if sb.Bucket(sn.key) != nil {
				if err := sb.DeleteBucket(sn.key); err != nil {
					return err
				}
			}
			nb, err := sb.CreateBucket(sn.key)
			for k := 0; err == nil && k < len(sn.vals); k += 2 {
				err = nb.Put(sn.vals[k], sn.vals[k+1])
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("store: copy snapshots into %s: %w", dst.path, err)
		}
	}
	return nil
}
