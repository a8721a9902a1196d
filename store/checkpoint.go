package store

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Checkpoint returns the last seq consumer has processed, 0 when it has
// none. Read it in the same transaction that reads the consumer's state.
// A malformed stored value reads as 0, which makes the consumer start
// over rather than skip events.
func Checkpoint(tx *bolt.Tx, consumer string) uint64 {
	b := tx.Bucket(bCheckpoints)
	if b == nil {
		return 0
	}
	seq, _ := u64(b.Get([]byte(consumer)))
	return seq
}

// SetCheckpoint records that consumer has processed every event up to
// seq. Call it in the write transaction that stores what the consumer
// derived from those events, so both commit or neither does.
func SetCheckpoint(tx *bolt.Tx, consumer string, seq uint64) error {
	if consumer == "" {
		return errors.New("store: set checkpoint: empty consumer name")
	}
	b := tx.Bucket(bCheckpoints)
	if b == nil {
		return fmt.Errorf("store: set checkpoint %q: bucket %q missing: %w", consumer, BucketCheckpoints, ErrCorrupt)
	}
	if err := b.Put([]byte(consumer), seqKey(seq)); err != nil {
		return fmt.Errorf("store: set checkpoint %q: %w", consumer, err)
	}
	return nil
}

// HeadTx is the seq of the last event as tx sees it, events appended
// earlier in the same transaction included (the requests of one group
// commit before an AppendFunc's). A decide compares it with the head its
// caller's read models had caught up with: equal means nothing was
// appended since, so what they say is current.
func HeadTx(tx *bolt.Tx) uint64 {
	if k, _ := tx.Bucket(bLog).Cursor().Last(); k != nil {
		if seq, ok := u64(k); ok {
			return seq
		}
	}
	head, _ := u64(tx.Bucket(bMeta).Get(metaHead))
	return head
}
