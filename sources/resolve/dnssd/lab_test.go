package dnssd_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/lab"
	"github.com/jocasta/jocasta/sources/resolve/dnssd"
)

// TestLab browses the services avahi-daemon 0.8 publishes in the lab, from
// the scanner namespace over the real mDNS group.
func TestLab(t *testing.T) {
	a := netip.MustParseAddr
	prefix := netip.MustParsePrefix("10.77.4.0/24")
	l := lab.New(t, lab.Spec{
		Prefix: prefix, Scanner: a("10.77.4.2"), DNS: a("10.77.4.3"),
		Hosts: []lab.HostSpec{
			{Name: "printer", IP: a("10.77.4.10"), MDNSName: "printer-kitchen",
				DNSSD: &lab.Service{Type: "_http._tcp", Name: "Kitchen Printer", Port: 8080}},
			{Name: "nas", IP: a("10.77.4.11"), MDNSName: "nas", DNSName: "nas.lab",
				DNSSD: &lab.Service{Type: "_smb._tcp", Name: "Family NAS", Port: 445}},
			{Name: "mute", IP: a("10.77.4.12")},
		},
	})
	if !l.InScanner(t) {
		return
	}
	host := func(name string) *sources.Host {
		h, _ := l.Host(name)
		return &sources.Host{IP: h.IP, Network: prefix}
	}
	printer, nas, mute := host("printer"), host("nas"), host("mute")
	nas.SetName(sources.NameDNS, "nas.lab")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := dnssd.New(dnssd.Options{}).Enrich(ctx, []*sources.Host{printer, nas, mute}); err != nil {
		t.Errorf("Enrich: %v", err)
	}
	tests := []struct {
		h        *sources.Host
		wantName string
		want     []sources.Service
	}{
		{printer, "Kitchen Printer", []sources.Service{{Instance: "Kitchen Printer", Type: "_http._tcp", Port: 8080}}},
		{nas, "", []sources.Service{{Instance: "Family NAS", Type: "_smb._tcp", Port: 445}}},
		{mute, "", nil},
	}
	for _, tc := range tests {
		if got := tc.h.Names[sources.NameDNSSD]; got != tc.wantName {
			t.Errorf("%v: dnssd name = %q, want %q", tc.h.IP, got, tc.wantName)
		}
		if diff := cmp.Diff(tc.want, tc.h.Services); diff != "" {
			t.Errorf("%v: services (-want +got):\n%s", tc.h.IP, diff)
		}
	}
}
