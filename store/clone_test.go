package store_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/store"
	"github.com/jocasta/jocasta/store/storetest"
)

// TestCloneAndReset clones an uncompacted store, resets the clone to its
// log, and checks what is kept and what is dropped; a compacted store is
// not cloned, and an existing file is never overwritten.
func TestCloneAndReset(t *testing.T) {
	s := storetest.Open(t)
	stored := appendN(t, s, 5, time.Now())
	err := s.DB().Update(func(tx *bolt.Tx) error {
		if err := fillProjection(tx, "inventory", 3); err != nil {
			return err
		}
		if err := store.SetCheckpoint(tx, "inventory", 5); err != nil {
			return err
		}
		return store.SaveSnapshotTx(tx, 4, time.Now(), []string{"inventory"})
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "clone.db")
	if cloned, err := s.CloneUncompacted(out); err != nil || !cloned {
		t.Fatalf("CloneUncompacted = %v, %v", cloned, err)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("clone: %v, %v", fi, err)
	}
	if _, err := s.CloneUncompacted(out); !errors.Is(err, fs.ErrExist) {
		t.Errorf("clone over an existing file: err = %v, want ErrExist", err)
	}

	c, err := store.Open(out, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Head() != 5 || c.First() != 1 {
		t.Fatalf("clone head %d first %d", c.Head(), c.First())
	}
	if err := c.DB().Update(store.ResetToLogTx); err != nil {
		t.Fatal(err)
	}
	c.DB().View(func(tx *bolt.Tx) error {
		if tx.Bucket([]byte("inventory")) != nil {
			t.Error("the projection's bucket survived the reset")
		}
		if cp := store.Checkpoint(tx, "inventory"); cp != 0 {
			t.Errorf("checkpoint %d survived the reset", cp)
		}
		return nil
	})
	if snaps, err := c.Snapshots(); err != nil || len(snaps) != 0 {
		t.Errorf("snapshots after the reset: %v, %v", snaps, err)
	}
	got, err := c.Read(1, 10)
	if err != nil || len(got) != 5 || got[4].Hash != stored[4].Hash {
		t.Fatalf("log after the reset: %d events, %v", len(got), err)
	}
	if rep, err := c.Verify(t.Context(), nil); err != nil || rep.Checked != 5 {
		t.Errorf("verify after the reset: %+v, %v", rep, err)
	}
	// The reset store still takes appends and snapshots.
	appendN(t, c, 1, time.Now())
	if err := c.DB().Update(func(tx *bolt.Tx) error { return store.SaveSnapshotTx(tx, 6, time.Now(), nil) }); err != nil {
		t.Errorf("snapshot after the reset: %v", err)
	}

	if _, err := s.Compact(t.Context(), 4); err != nil {
		t.Fatal(err)
	}
	compacted := filepath.Join(dir, "compacted.db")
	if cloned, err := s.CloneUncompacted(compacted); err != nil || cloned {
		t.Errorf("clone of a compacted store = %v, %v; want false, nil", cloned, err)
	}
	if _, err := os.Stat(compacted); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a compacted store left a file: %v", err)
	}
}

// The clone is byte for byte what bbolt's own Tx.WriteTo writes.
func TestCloneEqualsWriteTo(t *testing.T) {
	s := storetest.Open(t)
	appendN(t, s, 300, time.Now())
	out := filepath.Join(t.TempDir(), "clone.db")
	if _, err := s.CloneUncompacted(out); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := s.DB().View(func(tx *bolt.Tx) error { _, err := tx.WriteTo(&want); return err }); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("the clone (%d bytes) differs from WriteTo's copy (%d bytes)", len(got), want.Len())
	}
}
