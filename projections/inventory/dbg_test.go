package inventory

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jocasta/jocasta/projections"
)

func BenchmarkDbgEncodePage(b *testing.B) {
	h := fleet(b, 2000)
	p, _ := h.inv.ListDevices(context.Background(), projections.DeviceFilter{Limit: 100})
	b.ResetTimer()
	for b.Loop() {
		out, _ := json.Marshal(p)
		_ = out
	}
}
