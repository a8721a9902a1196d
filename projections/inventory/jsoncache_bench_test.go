package inventory

import (
	"context"
	"fmt"
	"testing"

	"github.com/jocasta/jocasta/projections"
)

// BenchmarkListDevicesJSON10k: the encoded page of GET
// /api/devices?limit=100 over 10,000 devices, 50 concurrent clients.
func BenchmarkListDevicesJSON10k(b *testing.B) {
	h := fleet(b, 10000)
	ctx := context.Background()
	benchClients(b, func() func(int) error {
		var buf []byte
		return func(int) error {
			var err error
			buf, _, err = h.inv.AppendDevicesJSON(ctx, buf[:0], projections.DeviceFilter{Limit: 100})
			if err == nil && len(buf) < 100*500 {
				err = fmt.Errorf("%d bytes for 100 devices", len(buf))
			}
			return err
		}
	})
}

// BenchmarkQJSON10k: encoded q= pages over 10,000 devices, 50 concurrent
// clients.
func BenchmarkQJSON10k(b *testing.B) {
	h := fleet(b, 10000)
	ctx := context.Background()
	benchClients(b, func() func(int) error {
		var buf []byte
		return func(n int) error {
			var err error
			buf, _, err = h.inv.AppendDevicesJSON(ctx, buf[:0], projections.DeviceFilter{Limit: 100, Q: benchQueries[n%len(benchQueries)]})
			return err
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
	benchClients(b, func() func(int) error {
		return func(n int) error {
			_, err := h.inv.DeviceJSON(ctx, all[n%len(all)].ID)
			return err
		}
	})
}
