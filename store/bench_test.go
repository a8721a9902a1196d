package store_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/store"
	bolt "go.etcd.io/bbolt"
)

// benchOpen opens a store for a benchmark, with real fsync unless opts
// says otherwise.
func benchOpen(b *testing.B, opts store.Options) *store.Store {
	b.Helper()
	s, err := store.Open(filepath.Join(b.TempDir(), "bench.db"), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// template returns e with ID cleared, so every append gets its own.
func template(e events.Envelope) events.Envelope {
	e.ID = ""
	return e
}

// BenchmarkAppendConcurrent: many goroutines appending one event each
// call, durable, group-committed. events/s is the figure to watch.
func BenchmarkAppendConcurrent(b *testing.B) {
	for _, c := range []struct {
		name    string
		event   func(b *testing.B) events.Envelope
		callers int
	}{
		{"token/callers=64", func(b *testing.B) events.Envelope { return tokenEvent(b, "bench") }, 64},
		{"token/callers=512", func(b *testing.B) events.Envelope { return tokenEvent(b, "bench") }, 512},
		{"sweep5/callers=512", func(b *testing.B) events.Envelope { return sweepEvent(b, 5, time.Now()) }, 512},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := benchOpen(b, store.Options{})
			ev := template(c.event(b))
			b.SetParallelism(max(1, c.callers/runtime.GOMAXPROCS(0)))
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					if _, err := s.Append(ctx, ev); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		})
	}
}

// BenchmarkAppendSingle: one caller, one durable append at a time; p99-ms
// is the 99th percentile latency of a durable append.
func BenchmarkAppendSingle(b *testing.B) {
	s := benchOpen(b, store.Options{})
	ev := template(sweepEvent(b, 5, time.Now()))
	ctx := context.Background()
	lat := make([]time.Duration, 0, 4096)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if _, err := s.Append(ctx, ev); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
}

// BenchmarkAppendBatch: one caller appending 100 events per call.
func BenchmarkAppendBatch(b *testing.B) {
	const per = 100
	s := benchOpen(b, store.Options{})
	batch := make([]events.Envelope, per)
	for i := range batch {
		batch[i] = template(sweepEvent(b, 5, time.Now()))
	}
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		if _, err := s.Append(ctx, batch...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*per)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkLogSize appends 20,000 typical sweep.completed events (5
// hosts) and reports the file size per event, the bytes of pages in use
// per event, and the stored value size.
func BenchmarkLogSize(b *testing.B) {
	const n, per = 20000, 200
	for b.Loop() {
		b.StopTimer()
		s := benchOpen(b, store.Options{})
		var valueBytes int
		b.StartTimer()
		for i := 0; i < n; i += per {
			batch := make([]events.Envelope, per)
			for j := range batch {
				batch[j] = sweepEvent(b, 5, time.Now())
			}
			stored, err := s.Append(context.Background(), batch...)
			if err != nil {
				b.Fatal(err)
			}
			for _, e := range stored {
				v, _ := e.CanonicalBytes()
				valueBytes += len(v) + len(`,"hash":""`) + 64
			}
		}
		b.StopTimer()
		info, err := os.Stat(s.Path())
		if err != nil {
			b.Fatal(err)
		}
		var used int64
		s.DB().View(func(tx *bolt.Tx) error { used = tx.Size(); return nil })
		b.ReportMetric(float64(info.Size())/n, "bytes/event")
		b.ReportMetric(float64(used)/n, "used-bytes/event")
		b.ReportMetric(float64(valueBytes)/n, "value-bytes/event")
		b.StartTimer()
	}
}

// BenchmarkAppendFlowWindow: one durable append of a flow window's event
// (166,667 packed rows: a 3.7 MB payload, stored out of line); B/op is
// what the append allocates beside the event it is given (the commit's
// pages among it).
func BenchmarkAppendFlowWindow(b *testing.B) {
	s := benchOpen(b, store.Options{})
	ev := template(largeEvent(b, 1, 166667))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Append(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStatsFlowLog: `jocasta log stats` of a log of 24 flow
// windows (166,667 packed rows each, 3.7 MB stored out of line) among
// 2,400 small events.
func BenchmarkStatsFlowLog(b *testing.B) {
	s := benchOpen(b, store.Options{NoSync: true})
	ctx := context.Background()
	for w := range 24 {
		if _, err := s.Append(ctx, largeEvent(b, w, 166667)); err != nil {
			b.Fatal(err)
		}
		batch := make([]events.Envelope, 100)
		for i := range batch {
			batch[i] = tokenEvent(b, "t")
		}
		if _, err := s.Append(ctx, batch...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		st, err := s.Stats(ctx)
		if err != nil || st.Events != 24*101 {
			b.Fatalf("stats: %v, %d events", err, st.Events)
		}
	}
}
