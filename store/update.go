package store

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Update runs fn in a write transaction on the store's file, as
// bolt.DB.Update does, for the writers beside the log (the projections'
// batches, the notification ledger). fn's own error rolls the
// transaction back and is returned as it is. A failed commit (a write or
// fsync error, a full disk) fails the store as an append's failed commit
// does: the file is shared, bbolt is not to be trusted after it, Failed
// closes and later appends answer ErrFailed. Its error wraps
// ErrOutcomeUnknown. A store that is closed, read-only or already failed
// refuses (ErrClosed, ErrReadOnly, ErrFailed) without touching the file.
func (s *Store) Update(fn func(*bolt.Tx) error) error {
	switch {
	case s.isClosed():
		return fmt.Errorf("store: update: %w", ErrClosed)
	case s.readOnly:
		return fmt.Errorf("store: update: %w", ErrReadOnly)
	}
	if err := s.Err(); err != nil {
		return fmt.Errorf("store: update: %w (%w)", ErrFailed, err)
	}
	var fnErr error
	err := s.update(func(tx *bolt.Tx) error {
		fnErr = fn(tx)
		return fnErr
	})
	switch {
	case err == nil:
		return nil
	case fnErr != nil:
		return fnErr
	}
	return s.commitFailed("update", err)
}

// View runs fn in a read transaction on the store's file, as
// bolt.DB.View does (with Update, the store is a projections.DB).
func (s *Store) View(fn func(*bolt.Tx) error) error { return s.db.View(fn) }

// commitFailed fails the store with the commit error err of op and
// returns the error its caller answers: the outcome is unknown.
func (s *Store) commitFailed(op string, err error) error {
	s.fail(err)
	return fmt.Errorf("store: %s: commit: %w: %w", op, ErrOutcomeUnknown, err)
}
