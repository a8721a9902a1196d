package routerapi_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/routerapi/routerapitest"
)

// BenchmarkReadRouter10k: one read of a router with 5,000 DHCP leases and
// 5,000 ARP entries over HTTP on loopback, parsed and merged into 5,000
// hosts (the fake router's encoding is outside the timer's share only as
// far as it runs on the other core).
func BenchmarkReadRouter10k(b *testing.B) {
	f := routerapitest.New("inv", "s3cret")
	var leases, arp []R
	for n := range 5000 {
		mac := fmt.Sprintf("02:00:00:00:%02X:%02X", n>>8, n&0xff)
		ip := fmt.Sprintf("10.%d.%d.%d", 8+n/1000, (n/250)%4, n%250+2)
		leases = append(leases, R{"address": ip, "mac-address": mac, "host-name": fmt.Sprintf("host-%d", n), "status": "bound", "last-seen": "3m2s", "dynamic": "true"})
		arp = append(arp, R{"address": ip, "mac-address": mac, "interface": "bridge", "status": "reachable", "complete": "true", "dynamic": "true"})
	}
	f.Set("ip/dhcp-server/lease", leases)
	f.Set("ip/arp", arp)
	f.Set("interface", nil)
	f.Set("interface/bridge/host", nil)
	ts := httptest.NewServer(f)
	defer ts.Close()
	r := reader(&testing.T{}, ts.URL, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := r.Poll(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if n := len(res.(*sources.HostRead).Hosts); n != 5000 {
			b.Fatalf("%d hosts", n)
		}
	}
}
