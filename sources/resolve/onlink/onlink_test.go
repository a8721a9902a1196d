package onlink

import (
	"net"
	"net/netip"
	"testing"
)

func TestFindAndOnLink(t *testing.T) {
	eth := net.Interface{Index: 2, Name: "eth0"}
	wlan := net.Interface{Index: 3, Name: "wlan0"}
	ls := Links{
		{Prefix: netip.MustParsePrefix("192.0.2.0/24"), Interface: eth},
		{Prefix: netip.MustParsePrefix("2001:db8::/64"), Interface: wlan},
	}
	tests := []struct {
		ip     string
		ifi    string
		onLink bool
	}{
		{"192.0.2.7", "eth0", true},
		{"::ffff:192.0.2.7", "eth0", true},
		{"198.51.100.1", "", false},
		{"2001:db8::5", "wlan0", true},
		{"2001:db8:1::5", "", false},
		{"fe80::1", "", true}, // link-local is on-link by definition
		{"fe80::1%eth9", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.ip, func(t *testing.T) {
			ip := netip.MustParseAddr(tc.ip)
			ifi, ok := ls.Find(ip)
			if ok != (tc.ifi != "") || ifi.Name != tc.ifi {
				t.Errorf("Find = %q %v, want %q", ifi.Name, ok, tc.ifi)
			}
			if got := ls.OnLink(ip); got != tc.onLink {
				t.Errorf("OnLink = %v, want %v", got, tc.onLink)
			}
		})
	}
}

func TestLocalHasLoopback(t *testing.T) {
	ls, err := Local()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ls.Find(netip.MustParseAddr("127.0.0.1")); !ok {
		t.Fatalf("loopback not among %v", ls)
	}
}
