package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
)

// chunkWriter keeps every byte written, in order, in pieces of 64, 128,
// 256 and 512 KiB, then 1 MiB each, each full but the last, whatever the
// sizes of the writes.
func TestChunkWriter(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		name   string
		writes []int
	}{
		{"nothing", nil},
		{"one byte", []int{1}},
		{"the first piece exactly", []int{64 << 10}},
		{"one byte past it", []int{64 << 10, 1}},
		{"one large write", []int{5<<20 + 3}},
		{"many small writes", func() []int {
			w := make([]int, 400_000)
			for k := range w {
				w[k] = 7
			}
			return w
		}()},
	} {
		t.Run(c.name, func(t *testing.T) {
			var w chunkWriter
			var want []byte
			for _, n := range c.writes {
				p := make([]byte, n)
				for k := range p {
					p[k] = byte(rng.Uint32())
				}
				if got, err := w.Write(p); got != n || err != nil {
					t.Fatalf("Write of %d bytes = %d, %v", n, got, err)
				}
				want = append(want, p...)
			}
			if got := w.chunks.join(); !bytes.Equal(got, want) {
				t.Fatalf("joined %d bytes, not the %d written", len(got), len(want))
			}
			if w.chunks.size() != len(want) {
				t.Errorf("size %d, want %d", w.chunks.size(), len(want))
			}
			for k, piece := range w.chunks {
				size := min(snapChunk, 64<<10<<k)
				if cap(piece) != size || (k < len(w.chunks)-1 && len(piece) != size) {
					t.Errorf("piece %d: %d bytes of %d, want %d of %d", k, len(piece), cap(piece), size, size)
				}
			}
		})
	}
}

// A snapshot larger than snapChunk is stored in pieces, loads back as
// it was dumped, says its whole size, and is copied with its pieces; a
// smaller one keeps the single value every snapshot had before.
func TestSnapshotInPieces(t *testing.T) {
	open := func(name string) *Store {
		s, err := Open(filepath.Join(t.TempDir(), name), Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s := open("j.db")
	rng := rand.New(rand.NewPCG(5, 6))
	fill := func(name string, n int) {
		t.Helper()
		err := s.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte(name))
			if err != nil {
				return err
			}
			for k := range n {
				v := make([]byte, 1024) // random: it hardly compresses
				for i := range v {
					v[i] = byte(rng.Uint32())
				}
				if err := b.Put(fmt.Appendf(nil, "%08d", k), v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	fill("big", 3000) // about 3 MB encoded
	fill("small", 10)
	at := time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC)
	err := s.Update(func(tx *bolt.Tx) error {
		if err := saveSnapshotAt(tx, 0, at, []string{"big"}); err != nil {
			return err
		}
		return saveSnapshot(tx, 7, events.ZeroHash, at, []string{"small"})
	})
	if err != nil {
		t.Fatal(err)
	}
	// stored: the big one in pieces, the small one in one value
	pieces := 0
	err = s.View(func(tx *bolt.Tx) error {
		big := tx.Bucket(bSnapshots).Bucket(seqKey(0))
		if big.Get(snapData) != nil {
			t.Error("the big snapshot is stored in one value")
		}
		c := big.Cursor()
		for k, _ := c.Seek(snapPieces()); k != nil && bytes.HasPrefix(k, snapPieces()); k, _ = c.Next() {
			if want := fmt.Sprintf("data/%06d", pieces); string(k) != want {
				t.Errorf("piece %d under %q, want %q", pieces, k, want)
			}
			pieces++
		}
		if small := tx.Bucket(bSnapshots).Bucket(seqKey(7)); small.Get(snapData) == nil {
			t.Error("the small snapshot is not stored in one value")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pieces < 3 {
		t.Fatalf("the big snapshot is in %d pieces, want at least 3", pieces)
	}
	infos, err := s.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	var stored int
	_ = s.View(func(tx *bolt.Tx) error {
		stored = len(snapshotData(tx.Bucket(bSnapshots).Bucket(seqKey(0))))
		return nil
	})
	if len(infos) != 2 || infos[0].Bytes != stored || stored <= snapChunk {
		t.Errorf("Snapshots() = %+v, the big one's data %d bytes", infos, stored)
	}
	check := func(st *Store, seq uint64, bucket string, n int) {
		t.Helper()
		snap, err := st.LoadSnapshot(seq)
		if err != nil {
			t.Fatal(err)
		}
		kvs := snap.Buckets[bucket]
		if len(kvs) != n {
			t.Fatalf("snapshot %d: %d pairs in %s, want %d", seq, len(kvs), bucket, n)
		}
		err = s.View(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte(bucket))
			for _, kv := range kvs {
				if !bytes.Equal(b.Get(kv.K), kv.V) {
					return fmt.Errorf("snapshot %d: %s's %q differs from the bucket", seq, bucket, kv.K)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	check(s, 0, "big", 3000)
	check(s, 7, "small", 10)
	dst := open("copy.db")
	if err := s.copySnapshots(dst, 0, 7); err != nil {
		t.Fatal(err)
	}
	check(dst, 0, "big", 3000)
	check(dst, 7, "small", 10)
}
