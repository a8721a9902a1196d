package traffic_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections/inventory"
	"github.com/jocasta/jocasta/projections/inventory/inventorytest"
	"github.com/jocasta/jocasta/projections/traffic"
	"github.com/jocasta/jocasta/store"
)

// BenchmarkApplyWindows applies the bench's memory load (make
// bench-flows: 10,000 devices × 1,000 peers an hour, 166,667 distinct
// rows a minute, in the listener's order) for three windows of one hour
// and reports the time per window, the heap allocated per window, the
// highest heap in use and the database's size.
func BenchmarkApplyWindows(b *testing.B) {
	const devices, peers, perWindow, windows = 10_000, 1_000, 166_667, 3
	evs := make([]events.Envelope, windows)
	pair := 0
	for w := range evs {
		rows := make([]events.TrafficRow, 0, perWindow)
		for range perWindow {
			d, p := pair%devices, pair/devices%peers
			rows = append(rows, events.TrafficRow{
				Src:   netip.AddrFrom4([4]byte{10, byte(d >> 16), byte(d >> 8), byte(d)}).String(),
				Dst:   netip.AddrFrom4([4]byte{198, 18 + byte(p>>16), byte(p >> 8), byte(p)}).String(),
				Proto: 6, Port: 443, Bytes: 1500, Packets: 3, Flows: 1,
			})
			pair++
		}
		sortRows(rows)
		end := at.Add(time.Duration(w+1) * time.Minute)
		e := events.MustNew(events.KindTrafficRecorded, events.TrafficRecorded{ScanID: "w", Started: end.Add(-time.Minute), Finished: end, Rows: rows}, end)
		e.Seq, e.Source = uint64(w+1), "flowlistener:bench"
		evs[w] = e
	}
	inv := inventorytest.New(b, inventory.Options{})
	b.ResetTimer()
	var peak uint64
	var size int64
	for b.Loop() {
		b.StopTimer()
		// Releasing the mapped pages as serve does (cmd/jocasta/traffic.go).
		p, err := traffic.New(traffic.Options{Addresses: inv.Inv, ReleaseMapped: store.ReleaseMappedTx})
		if err != nil {
			b.Fatal(err)
		}
		path := filepath.Join(b.TempDir(), "t.db")
		db, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		err = db.Update(func(tx *bolt.Tx) error {
			for _, name := range p.Buckets() {
				if _, err := tx.CreateBucketIfNotExists([]byte(name)); err != nil {
					return err
				}
			}
			return p.Load(tx)
		})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		done := make(chan struct{})
		go func() { // the highest heap in use while applying
			t := time.NewTicker(5 * time.Millisecond)
			defer t.Stop()
			for {
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
				select {
				case <-done:
					return
				case <-t.C:
				}
			}
		}()
		b.StartTimer()
		for _, e := range evs {
			// As the runner applies it (runner.Chunker): a large window's
			// rows in parts first, then the event.
			if p.Chunked(e) {
				if err := p.ApplyChunks(context.Background(), db, e); err != nil {
					b.Fatal(err)
				}
			}
			if err := db.Update(func(tx *bolt.Tx) error { return p.Apply(tx, e) }); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		close(done)
		if fi, err := os.Stat(path); err == nil {
			size = fi.Size()
		}
		_ = db.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*windows)/1e6, "ms/window")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(size)/(1<<20), "db-MiB")
}

// sortRows puts rows in the listener's order: by source, destination,
// protocol, port.
func sortRows(rows []events.TrafficRow) {
	key := func(r events.TrafficRow) (netip.Addr, netip.Addr) {
		return netip.MustParseAddr(r.Src), netip.MustParseAddr(r.Dst)
	}
	slices.SortFunc(rows, func(a, b events.TrafficRow) int {
		as, ad := key(a)
		bs, bd := key(b)
		if c := as.Compare(bs); c != 0 {
			return c
		}
		return ad.Compare(bd)
	})
}
