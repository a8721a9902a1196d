package store

import (
	"bytes"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestDropValuePagesOnlyInTheMap: dropValuePages drops the pages of a
// value in the file's map, which read back the same from the page cache,
// and leaves a value that is not in it alone (a value put in a write
// transaction is on the heap: dropping its pages would zero it).
func TestDropValuePagesOnlyInTheMap(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "d.db"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want := bytes.Repeat([]byte{0x5a}, 3*largeValue)
	intact := func(v []byte) bool { return len(v) == len(want) && bytes.Count(v, []byte{0x5a}) == len(want) }
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("b"))
		if err != nil {
			return err
		}
		if err := b.Put([]byte("k"), bytes.Clone(want)); err != nil {
			return err
		}
		heap := b.Get([]byte("k")) // the transaction's own, not yet in the file
		dropValuePages(tx, heap)
		if !intact(heap) {
			t.Error("a value on the heap changed: its pages were dropped")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket([]byte("b")).Get([]byte("k"))
		dropValuePages(tx, v)
		if !intact(v) {
			t.Error("a value in the map reads back different after its pages were dropped")
		}
		own := bytes.Clone(want)
		dropValuePages(tx, own)
		if !intact(own) {
			t.Error("a heap copy changed: its pages were dropped")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
