package inventory

import (
	"context"
	"testing"

	"github.com/jocasta/jocasta/projections"
)

// BenchmarkListDevicesJSON10k: the encoded page of GET
// /api/devices?limit=100 over 10,000 devices, 50 concurrent clients.
func BenchmarkListDevicesJSON10k(b *testing.B) {
	h := fleet(b, 10000)
	ctx := context.Background()
	b.SetParallelism(25) // × GOMAXPROCS 2 = 50 clients
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var buf []byte
		for pb.Next() {
			var err error
			if buf, _, err = h.inv.AppendDevicesJSON(ctx, buf[:0], projections.DeviceFilter{Limit: 100}); err != nil || len(buf) < 100*500 {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkQJSON10k: encoded q= pages over 10,000 devices, 50 concurrent
// clients.
func BenchmarkQJSON10k(b *testing.B) {
	h := fleet(b, 10000)
	ctx := context.Background()
	qs := []string{"host-12", "apple", "10.0.3", "3c:22:fb:00:1", "nothing-matches"}
	b.SetParallelism(25)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var buf []byte
		n := 0
		for pb.Next() {
			var err error
			if buf, _, err = h.inv.AppendDevicesJSON(ctx, buf[:0], projections.DeviceFilter{Limit: 100, Q: qs[n%len(qs)]}); err != nil {
				b.Fatal(err)
			}
			n++
		}
	})
}

// BenchmarkQNoMatch10k: a q= that matches nothing, the whole inventory
// searched.
func BenchmarkQNoMatch10k(b *testing.B) {
	h := fleet(b, 10000)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	var buf []byte
	for b.Loop() {
		var err error
		if buf, _, err = h.inv.AppendDevicesJSON(ctx, buf[:0], projections.DeviceFilter{Limit: 100, Q: "nothing-matches"}); err != nil || len(buf) != 0 {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeviceJSON: GET /api/devices/{id} over 10,000 devices (single
// reads do not fill the cache: each is encoded).
func BenchmarkDeviceJSON(b *testing.B) {
	h := fleet(b, 10000)
	ctx := context.Background()
	all := h.devicesAll()
	b.SetParallelism(25)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		n := 0
		for pb.Next() {
			if _, err := h.inv.DeviceJSON(ctx, all[n%len(all)].ID); err != nil {
				b.Fatal(err)
			}
			n++
		}
	})
}
