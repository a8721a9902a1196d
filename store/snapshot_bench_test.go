package store_test

import (
	"encoding/binary"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/jocasta/jocasta/store"
	bolt "go.etcd.io/bbolt"
)

// BenchmarkSaveSnapshot snapshots a projection bucket of 1,000,000 rows
// shaped like the traffic projection's (a 24-byte key of hour, address
// and peer, a value of a few varints; pseudo-random, so that it hardly
// compresses, as traffic does not), as the runner does weekly in a
// batch's transaction. It reports the highest heap in use above the
// heap before it (the snapshot is encoded whole in memory, and bbolt
// holds what is put until the commit writes it), the snapshot's size and
// the rows' bytes. Run it with -benchtime 1x: further rounds replace the
// snapshot, which the weekly one does not.
func BenchmarkSaveSnapshot(b *testing.B) {
	const rows = 1_000_000
	s, err := store.Open(filepath.Join(b.TempDir(), "j.db"), store.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	var raw int
	for lo := 0; lo < rows; lo += 100_000 {
		err := s.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte("traffic"))
			if err != nil {
				return err
			}
			for i := lo; i < lo+100_000; i++ {
				k := binary.BigEndian.AppendUint32(nil, uint32(i/10_000)) // the hour
				k = binary.BigEndian.AppendUint64(k, uint64(i))
				k = binary.BigEndian.AppendUint64(k, rng.Uint64())
				k = binary.BigEndian.AppendUint32(k, rng.Uint32())
				v := binary.AppendUvarint(nil, rng.Uint64N(1<<30))
				v = binary.AppendUvarint(v, rng.Uint64N(1<<20))
				v = binary.AppendUvarint(v, rng.Uint64N(1<<10))
				raw += len(k) + len(v)
				if err := bk.Put(k, v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	var peak, base uint64
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base = ms.HeapInuse
		done := make(chan struct{})
		sampled := make(chan uint64)
		go func() { // the highest heap in use while the snapshot is taken
			var top uint64
			t := time.NewTicker(time.Millisecond)
			defer t.Stop()
			for {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				top = max(top, ms.HeapInuse)
				select {
				case <-done:
					sampled <- top
					return
				case <-t.C:
				}
			}
		}()
		b.StartTimer()
		err := s.Update(func(tx *bolt.Tx) error {
			return store.SaveSnapshotTx(tx, 0, time.Unix(0, 0), []string{"traffic"})
		})
		b.StopTimer()
		close(done)
		if top := <-sampled; top > base {
			peak = max(peak, top-base)
		}
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	snaps, err := s.Snapshots()
	if err != nil || len(snaps) != 1 {
		b.Fatalf("snapshots %v: %v", snaps, err)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(snaps[0].Bytes)/(1<<20), "snapshot-MiB")
	b.ReportMetric(float64(raw)/(1<<20), "rows-MiB")
}
