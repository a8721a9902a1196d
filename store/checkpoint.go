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
