package routerapi

import (
	"encoding/json"
	"net/netip"
	"testing"

	"github.com/jocasta/jocasta/sources"
)

// FuzzTables feeds hostile replies to every table's parser: no panic,
// every host well-formed, the outside address empty or a canonical IPv4
// address.
func FuzzTables(f *testing.F) {
	for _, seed := range []string{
		`[{"address":"192.0.2.50","mac-address":"00:00:5E:00:53:11","host-name":"printer","status":"bound","last-seen":"1m9s"}]`,
		`[{"address":"192.0.2.61","interface":"bridge","status":"failed","complete":false,"invalid":1}]`,
		`[{"mac-address":"00:00:5E:00:53:11","on-interface":"ether3","local":"false"},{"mac-address":"x","local":"true"}]`,
		`[{"interface":"wlan1","mac-address":"00:00:5E:00:53:77","signal-strength":"-62@6Mbps","last-ip":"192.0.2.77"}]`,
		`[{"last-seen":"99999999999w","signal":"-2147483649"}]`, `{"error":400}`, `[null,1,"x"]`, `[`,
		`[{"dst-address":"0.0.0.0/0","immediate-gw":"203.0.113.1%ether1","active":"true","address":"203.0.113.7/24","interface":"ether1"}]`,
		`[{"dst-address":"0.0.0.0/0","gateway":"pppoe-out1","active":true,"address":"198.51.100.7/32","interface":"pppoe-out1","invalid":false}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &Reader{}
		var read sources.HostRead
		var set sources.HostSet
		var leases []leaseRow
		if json.Unmarshal(data, &leases) == nil {
			r.applyLeases(leases, &read, &set)
		}
		var arp []arpRow
		if json.Unmarshal(data, &arp) == nil {
			r.applyARP(arp, &read, &set)
			r.applyNeighbours6(arp, &read, &set)
		}
		var bh []bridgeHostRow
		if json.Unmarshal(data, &bh) == nil {
			r.applyBridgeHosts(bh, &read, &set)
		}
		var reg []regRow
		if json.Unmarshal(data, &reg) == nil {
			r.applyRegistrations(reg, &read, &set)
		}
		var routes []routeRow
		var addrs []addressRow
		if json.Unmarshal(data, &routes) == nil && json.Unmarshal(data, &addrs) == nil {
			if o := outsideAddress(defaultInterfaces(routes), addrs); o != "" {
				if ip, err := netip.ParseAddr(o); err != nil || !ip.Is4() || ip.String() != o {
					t.Fatalf("outside %q is not a canonical IPv4 address", o)
				}
			}
		}
		for _, h := range set.Hosts() {
			if sources.NormalizeMAC(h.MAC) != h.MAC {
				t.Fatalf("host MAC %q not normalised", h.MAC)
			}
			for _, ip := range h.IPs {
				if !ip.IsValid() || ip.IsLinkLocalUnicast() {
					t.Fatalf("host address %v", ip)
				}
			}
			if h.Signal > 0 || h.Signal < -150 {
				t.Fatalf("signal %d", h.Signal)
			}
		}
	})
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"1m9s", "1m9s", true}, {"2d20h12m20s", "68h12m20s", true}, {"1w1d11h11m1s", "203h11m1s", true},
		{"453us", "453µs", true}, {"31s250ms", "31.25s", true}, {"00:00:20", "20s", true},
		{"never", "0s", false}, {"", "0s", false}, {"5x", "0s", false}, {"m", "0s", false}, {"9999999999s", "0s", false},
	} {
		d, ok := parseDuration(tc.in)
		if ok != tc.ok || d.String() != tc.want {
			t.Errorf("parseDuration(%q) = %v %v, want %s %v", tc.in, d, ok, tc.want, tc.ok)
		}
	}
}
