package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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

	for stop := false; !stop; {
		var keys, vals [][]byte
		next := tip
		err := s.db.View(func(tx *bolt.Tx) error {
			c := tx.Bucket(bLog).Cursor()
			for k, v := c.Seek(seqKey(tip.Seq + 1)); k != nil; k, v = c.Next() {
				if len(keys) == scanChunk {
					return nil
				}
				e, err := decodeEnvelope(v)
				if err != nil {
					return fmt.Errorf("seq %x: %w: %w", k, ErrCorrupt, err)
				}
				if seq, _ := keySeq(k); seq != next.Seq+1 || e.Seq != seq || e.PrevHash != next.Hash {
					return fmt.Errorf("chain broken at seq %d (run jocasta log verify): %w", next.Seq+1, ErrCorrupt)
				}
				if !until.IsZero() && e.Time.After(until) {
					break
				}
				keys, vals = append(keys, bytes.Clone(k)), append(vals, bytes.Clone(v))
				next = anchor{Seq: e.Seq, Hash: e.Hash}
			}
			stop = true
			return nil
		})
		if err != nil {
			return copied, fmt.Errorf("store: copy log: %w", err)
		}
		if len(keys) == 0 {
			break
		}
		err = dst.db.Update(func(tx *bolt.Tx) error {
			lb := tx.Bucket(bLog)
			lb.FillPercent = logFillPercent
			for i := range keys {
				if err := lb.Put(keys[i], vals[i]); err != nil {
					return err
				}
			}
			return putTip(tx, next, a)
		})
		if err != nil {
			return copied, fmt.Errorf("store: copy log into %s: %w", dst.path, err)
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
	type snap struct{ key, info, data []byte }
	var snaps []snap
	err := s.db.View(func(tx *bolt.Tx) error {
		sb := tx.Bucket(bSnapshots)
		return sb.ForEachBucket(func(k []byte) error {
			if n, ok := keySeq(k); ok && n >= from && n <= to {
				nb := sb.Bucket(k)
				snaps = append(snaps, snap{bytes.Clone(k), bytes.Clone(nb.Get(snapInfo)), bytes.Clone(nb.Get(snapData))})
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
			if err == nil {
				err = nb.Put(snapInfo, sn.info)
			}
			if err == nil {
				err = nb.Put(snapData, sn.data)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("store: copy snapshots into %s: %w", dst.path, err)
		}
	}
	return nil
}
