package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

// CloneUncompacted writes a copy of the whole database file, as one read
// transaction sees it, to a new file at path (created 0600; an existing
// file is never overwritten) and reports true. When the log was compacted
// it writes nothing and reports false: a replay of a compacted log starts
// from a snapshot and copies the log instead ([Store.CopyLog]). The copy
// goes from file to file in the kernel where it can (copy_file_range), so
// it costs far less than copying the log event by event. It is not
// synced: whoever finishes the new file syncs it. The source may keep
// appending meanwhile; the copy holds what was committed when it began.
func (s *Store) CloneUncompacted(path string) (cloned bool, err error) {
	if s.isClosed() {
		return false, ErrClosed
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bMeta).Get(metaAnchor) != nil {
			return nil // compacted
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		_, werr := tx.WriteTo(f)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return errors.Join(werr, os.Remove(path))
		}
		cloned = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("store: clone into %s: %w", path, err)
	}
	return cloned, nil
}

// ResetToLogTx empties a database down to its log: it deletes every
// bucket but the log and meta (every projection's rows and versions,
// consumer checkpoints, snapshots) and recreates the store's own empty
// ones, so that projections run on it rebuild from the first event. For
// a clone made by [Store.CloneUncompacted], before a replay rebuilds it.
func ResetToLogTx(tx *bolt.Tx) error {
	var names [][]byte
	err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		if !bytes.Equal(name, bLog) && !bytes.Equal(name, bMeta) {
			names = append(names, bytes.Clone(name))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: reset to the log: %w", err)
	}
	for _, n := range names {
		if err := tx.DeleteBucket(n); err != nil {
			return fmt.Errorf("store: reset to the log: drop bucket %q: %w", n, err)
		}
	}
	for _, b := range [][]byte{bCheckpoints, bSnapshots} {
		if _, err := tx.CreateBucket(b); err != nil {
			return fmt.Errorf("store: reset to the log: create bucket %q: %w", b, err)
		}
	}
	return nil
}
