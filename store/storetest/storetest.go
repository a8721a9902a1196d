package storetest

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/jocasta/jocasta/store"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Open opens a new store in t.TempDir with default options and checks the
// file's integrity when the test ends.
func Open(t testing.TB) *store.Store {
	t.Helper()
	return OpenWith(t, store.Options{})
}

// OpenWith is Open with options (a custom registry, say).
func OpenWith(t testing.TB, opts store.Options) *store.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jocasta.db")
	s, err := store.Open(path, opts)
	if err != nil {
		t.Fatalf("storetest: open: %v", err)
	}
	t.Cleanup(func() {
		err := s.DB().View(func(tx *bolt.Tx) error { return Check(t, tx) })
		if errors.Is(err, berrors.ErrDatabaseNotOpen) {
			err = checkFile(t, path)
		}
		if err != nil {
			t.Errorf("storetest: integrity check of %s: %v", path, err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("storetest: close: %v", err)
		}
	})
	return s
}

// Check runs tx.Check and reports every finding with t.Errorf. It
// returns nil; the findings fail the test.
func Check(t testing.TB, tx *bolt.Tx) error {
	t.Helper()
	for err := range tx.Check() {
		t.Errorf("storetest: bbolt check: %v", err)
	}
	return nil
}

// checkFile checks a closed store's file, opened read-only.
func checkFile(t testing.TB, path string) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error { return Check(t, tx) })
}
