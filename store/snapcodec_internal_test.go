package store

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// dumpBucket lists b's pairs and nested buckets, recursively. The bytes
// point into the transaction; encode them before it ends.
func dumpBucket(b *bolt.Bucket) ([]KV, error) {
	kvs := []KV{}
	err := b.ForEach(func(k, v []byte) error {
		var nb *bolt.Bucket
		if v == nil {
			nb = b.Bucket(k)
		}
		if nb == nil {
			kvs = append(kvs, KV{K: k, V: v})
			return nil
		}
		sub, err := dumpBucket(nb)
		if err != nil {
			return err
		}
		kvs = append(kvs, KV{K: k, Nested: true, Bucket: sub, Sequence: nb.Sequence()})
		return nil
	})
	return kvs, err
}

// dumpSnapshot is the snapshot saveSnapshot took before it encoded
// straight from the transaction: every named bucket dumped into KVs
// first.
func dumpSnapshot(tx *bolt.Tx, seq uint64, hash string, t time.Time, buckets []string) (*Snapshot, error) {
	snap := Snapshot{Seq: seq, Hash: hash, Time: t.UTC(), Buckets: map[string][]KV{}}
	for _, name := range buckets {
		if _, dup := snap.Buckets[name]; dup {
			continue
		}
		b := tx.Bucket([]byte(name))
		if b == nil {
			snap.Buckets[name] = []KV{}
			continue
		}
		kvs, err := dumpBucket(b)
		if err != nil {
			return nil, err
		}
		snap.Buckets[name] = kvs
		if sq := b.Sequence(); sq != 0 {
			if snap.Sequences == nil {
				snap.Sequences = map[string]uint64{}
			}
			snap.Sequences[name] = sq
		}
	}
	return &snap, nil
}

// A snapshot encoded straight from the transaction is byte for byte the
// one encoded from a dump of the same buckets (values, empty values,
// nested buckets two deep with their sequences, an empty bucket, a
// missing one, a name given twice), and decodes to that dump.
func TestEncodeSnapshotTxEqualsDump(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "s.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		a, _ := tx.CreateBucket([]byte("p.a"))
		for i := range 3000 {
			if err := a.Put([]byte{byte(i >> 8), byte(i)}, bytes.Repeat([]byte{byte(i)}, i%50)); err != nil {
				return err
			}
		}
		if err := a.SetSequence(42); err != nil {
			return err
		}
		n, _ := a.CreateBucket([]byte("nested"))
		_ = n.SetSequence(7)
		_ = n.Put([]byte("k"), []byte("v"))
		nn, _ := n.CreateBucket([]byte("deeper"))
		_ = nn.Put([]byte("x"), []byte{})
		_, err := tx.CreateBucket([]byte("p.empty"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	names := []string{"p.a", "p.missing", "p.empty", "p.a"}
	hash := strings.Repeat("ab", 32)
	err = db.View(func(tx *bolt.Tx) error {
		pieces, err := encodeSnapshotTx(tx, 99, hash, at, names)
		if err != nil {
			return err
		}
		got := pieces.join()
		snap, err := dumpSnapshot(tx, 99, hash, at, names)
		if err != nil {
			return err
		}
		want, err := encodeSnapshot(snap)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			t.Errorf("encoded from the transaction: %d bytes, from the dump: %d bytes, not equal", len(got), len(want))
		}
		back, err := decodeSnapshot(got)
		if err != nil {
			return err
		}
		if back.Seq != 99 || back.Sequences["p.a"] != 42 || len(back.Buckets["p.a"]) != 3001 || len(back.Buckets["p.missing"]) != 0 {
			t.Errorf("decoded: seq %d, sequences %v, %d pairs in p.a", back.Seq, back.Sequences, len(back.Buckets["p.a"]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// encodeSnapshot writes snap in the layout of snapcodec.go, compressed,
// from its list of pairs: the reference encodeSnapshotTx is checked
// against, and how the tests write snapshots of their own.
func encodeSnapshot(snap *Snapshot) ([]byte, error) {
	names := make([]string, 0, len(snap.Buckets))
	for name := range snap.Buckets {
		if name == "" {
			return nil, errors.New("encode: a bucket without a name")
		}
		names = append(names, name)
	}
	head := snapHeader{Seq: snap.Seq, Hash: snap.Hash, Time: snap.Time, Sequences: snap.Sequences}
	pieces, err := encodeSnapshotWith(head, names, func(w *snapWriter, name string) { w.entries(snap.Buckets[name], 0) })
	return pieces.join(), err
}

// entries writes kvs as bucket writes a bucket's pairs.
func (w *snapWriter) entries(kvs []KV, depth int) {
	for _, kv := range kvs {
		if w.err != nil {
			return
		}
		if kv.Nested && depth >= maxSnapDepth {
			w.err = fmt.Errorf("buckets nested deeper than %d", maxSnapDepth)
			return
		}
		if kv.Nested {
			w.w.WriteByte(snapNested)
			w.bytes(kv.K)
			w.uvarint(kv.Sequence)
			w.entries(kv.Bucket, depth+1)
			continue
		}
		w.w.WriteByte(snapValue)
		w.bytes(kv.K)
		w.bytes(kv.V)
	}
	if w.err == nil {
		w.err = w.w.WriteByte(snapEnd)
	}
}
