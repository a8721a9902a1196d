package inventory

import (
	"fmt"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
)

// routerHosts is a router's 5,000 leases and 5,000 neighbour entries as
// a read merges them: 5,000 hosts, each with its lease's name and
// address and its live neighbour entry, on two /22s.
func routerHosts() []events.ReadHost {
	out := make([]events.ReadHost, 0, 5000)
	for n := range 5000 {
		h := events.ReadHost{
			MAC:   fmt.Sprintf("02:00:00:00:%02x:%02x", n>>8, n&0xff),
			IPs:   []string{fmt.Sprintf("10.%d.%d.%d", 8+n/1000, (n/250)%4, n%250+2)},
			Names: map[string]string{"dhcp": fmt.Sprintf("host-%d", n)},
			Seen:  true,
		}
		if n%3 == 0 {
			h.Port = fmt.Sprintf("ether%d", n%24+1)
		}
		out = append(out, h)
	}
	return out
}

// BenchmarkApplyRouterRead: one read of a router with 5,000 leases and
// 5,000 neighbours (5,000 hosts) applied to an inventory that already
// holds them, as every read of a stable network is: a difference with
// nothing set, every host seen again. Applied and flushed in one bbolt
// transaction, as the runner does.
func BenchmarkApplyRouterRead(b *testing.B) {
	h := newHarness(b, Options{OnlineWindow: time.Hour})
	at := t0
	base := h.read(events.PluginRead{ScanID: "r0", Finished: at, Complete: true, Peer: corePeer, Set: routerHosts()})
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; b.Loop(); n++ {
		at = at.Add(time.Minute)
		base = h.read(events.PluginRead{ScanID: "r", Finished: at, Complete: true, Base: base})
	}
	b.StopTimer()
	if d := h.inv.byKey[macKey("02:00:00:00:00:07")]; d == nil || !d.LastSeen.Equal(at) || len(h.inv.devs) != 5000 {
		b.Fatalf("%d devices, last seen %v, want %v", len(h.inv.devs), d.LastSeen, at)
	}
}

// BenchmarkApplyRouterReadWhole: the first read after a start, written
// whole (every host in the event), on the same inventory.
func BenchmarkApplyRouterReadWhole(b *testing.B) {
	h := newHarness(b, Options{OnlineWindow: time.Hour})
	hosts := routerHosts()
	at := t0
	h.read(events.PluginRead{ScanID: "r0", Finished: at, Complete: true, Peer: corePeer, Set: hosts})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		at = at.Add(time.Minute)
		h.read(events.PluginRead{ScanID: "r", Finished: at, Complete: true, Peer: corePeer, Set: hosts})
	}
}
