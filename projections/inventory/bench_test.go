package inventory

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// benchClients runs 50 concurrent clients (25 × GOMAXPROCS 2). Each
// client gets its own call from newClient and makes it with the number of
// calls it made before; an error fails the benchmark.
func benchClients(b *testing.B, newClient func() func(n int) error) {
	b.SetParallelism(25)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		call := newClient()
		for n := 0; pb.Next(); n++ {
			if err := call(n); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchQueries are the q= values the search benchmarks cycle through.
var benchQueries = []string{"host-12", "apple", "10.0.3", "3c:22:fb:00:1", "nothing-matches"}

// BenchmarkListDevices10k: GET /api/devices?limit=100 over 10,000
// devices, default sort, 50 concurrent clients.
func BenchmarkListDevices10k(b *testing.B) {
	h := fleet(b, 10000)
	ctx := context.Background()
	benchClients(b, func() func(int) error {
		return func(int) error {
			p, err := h.inv.ListDevices(ctx, projections.DeviceFilter{Limit: 100})
			if err == nil && len(p.Items) != 100 {
				err = fmt.Errorf("%d items, want 100", len(p.Items))
			}
			return err
		}
	})
}

// BenchmarkListDevicesSorted10k pages through every sort order.
func BenchmarkListDevicesSorted10k(b *testing.B) {
	h := fleet(b, 10000)
	ctx := context.Background()
	sorts := []string{"name", "-ip", "first_seen", "-last_seen"}
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; b.Loop(); n++ {
		if _, err := h.inv.ListDevices(ctx, projections.DeviceFilter{Limit: 100, Sort: sorts[n%len(sorts)]}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQ10k: q= over 10,000 devices, 50 concurrent clients.
func BenchmarkQ10k(b *testing.B) {
	h := fleet(b, 10000)
	ctx := context.Background()
	benchClients(b, func() func(int) error {
		return func(n int) error {
			_, err := h.inv.ListDevices(ctx, projections.DeviceFilter{Limit: 100, Q: benchQueries[n%len(benchQueries)]})
			return err
		}
	})
}

// BenchmarkDevice: GET /api/devices/{id} over 10,000 devices.
func BenchmarkDevice(b *testing.B) {
	h := fleet(b, 10000)
	ctx := context.Background()
	all := h.devicesAll()
	benchClients(b, func() func(int) error {
		return func(n int) error {
			_, err := h.inv.Device(ctx, all[n%len(all)].ID)
			return err
		}
	})
}

// BenchmarkApplySweep applies 1,000 single-host sweeps per transaction
// (the projection alone: no log reads) over 1,000 known devices.
func BenchmarkApplySweep(b *testing.B) {
	h := newHarness(b, Options{})
	evs := make([]events.Envelope, 0, 1000)
	for k := range 1000 {
		at := t0.Add(time.Duration(k) * time.Second)
		s := sweepAt(at, host(fmt.Sprintf("10.0.%d.%d", k/250, k%250+1), fmt.Sprintf("00:11:22:00:%02x:%02x", k>>8, k&0xff), "dns=h.lab"))
		evs = append(evs, h.envelope(events.KindSweepCompleted, s, at, "sweep:lab", "", ""))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; b.Loop(); n++ {
		err := h.db.Update(func(tx *bolt.Tx) error {
			for _, ev := range evs {
				ev.Seq += uint64(n) * 1000
				if err := h.inv.Apply(tx, ev); err != nil {
					return err
				}
			}
			return h.inv.Flush(tx)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(evs))/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkLoadedHeap10k: the live heap an inventory of 10,000 devices
// (fleet: a MAC, an address, two in three named by DNS, some edited)
// holds once loaded from its rows, per device. It is what serve keeps
// for its device table whatever else it does (issue 10's memory).
func BenchmarkLoadedHeap10k(b *testing.B) {
	const n = 10000
	h := fleet(b, n)
	b.ReportMetric(loadedHeap(b, h)/n, "heap-B/device")
}

// BenchmarkLoadedOneSweep10k: the heap a loaded inventory holds after one
// sweep of 10,000 hosts (as jocasta-load seed writes it): the devices and
// the sweep's responders, kept as the base of the source's next sweep.
func BenchmarkLoadedOneSweep10k(b *testing.B) {
	const n = 10000
	h := newHarness(b, Options{})
	hosts := make([]events.SweepHost, 0, n)
	for k := range n {
		ip := fmt.Sprintf("10.%d.%d.%d", k/62500, k/250%250, k%250+1)
		hs := host(ip, fmt.Sprintf("00:11:22:%02x:%02x:%02x", k>>16&0xff, k>>8&0xff, k&0xff), fmt.Sprintf("dns=host-%d.lab", k))
		hs.Network = netip.MustParsePrefix(ip + "/24").Masked().String()
		hosts = append(hosts, hs)
	}
	s := sweepAt(t0, hosts...)
	s.Networks = nil
	h.sweep(s)
	b.ReportMetric(loadedHeap(b, h)/n, "heap-B/host")
}

// loadedHeap is the live heap an inventory loaded from h's rows holds.
// Two collections before the first reading: a sync.Pool keeps what it
// held through one (the setup's pooled buffers would be freed during the
// measurement, and a single run would read less than nothing).
func loadedHeap(b *testing.B, h *harness) float64 {
	var held float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&before)
		inv := h.load()
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(inv)
		held = float64(after.HeapAlloc - before.HeapAlloc)
	}
	return held
}
