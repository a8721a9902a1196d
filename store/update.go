package store

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Update runs fn in a write transaction on the store's file, as
// bolt.DB.Update does, for the writers beside the log (the projections'
// batches, the notification ledger). fn's own error rolls the
// transaction back and is returned as it is. A failed commit (a write or
// fsync error, a full disk) fails the store as an append's failed commit
// does: the file is shared, bbolt is not to be trusted after it, Failed
// closes and later appends answer ErrFailed. Its error wraps
// ErrOutcomeUnknown. A store that already failed refuses with ErrFailed
// without touching the file.
func (s *Store) Update(fn func(*bolt.Tx) error) error {
	if err := s.Err(); err != nil {
		return fmt.Errorf("store: update: %w (%w)", ErrFailed, err)
	}
	var fnErr error
	err := s.db.Update(func(tx *bolt.Tx) error {
		if fnErr = fn(tx); fnErr != nil {
			return fnErr
		}
		if commitFault != nil {
			return commitFault()
		}
		return nil
	})
	switch {
	case err == nil:
		return nil
	case fnErr != nil:
		return fnErr
	case errors.Is(err, berrors.ErrDatabaseNotOpen), errors.Is(err, berrors.ErrDatabaseReadOnly), errors.Is(err, berrors.ErrTxClosed):
		// Nothing was written: a closed or read-only store is no failure.
		return fmt.Errorf("store: update: %w", err)
	}
	s.fail(err)
	return fmt.Errorf("store: update: commit: %w: %w", ErrOutcomeUnknown, err)
}
