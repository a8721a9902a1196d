package ssdp_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/lab"
	"github.com/jocasta/jocasta/sources/resolve/ssdp"
)

// TestLab searches for minidlna 1.3.0 from the scanner namespace and reads
// its description.
func TestLab(t *testing.T) {
	a := netip.MustParseAddr
	prefix := netip.MustParsePrefix("10.77.5.0/24")
	l := lab.New(t, lab.Spec{
		Prefix: prefix, Scanner: a("10.77.5.2"), DNS: a("10.77.5.3"),
		Hosts: []lab.HostSpec{
			{Name: "tv", IP: a("10.77.5.12"), UPnP: "Living Room TV"},
			{Name: "nas", IP: a("10.77.5.13"), UPnP: "NAS Media", DNSName: "nas.lab"},
			{Name: "mute", IP: a("10.77.5.14")},
		},
	})
	if !l.InScanner(t) {
		return
	}
	host := func(name string) *sources.Host {
		h, _ := l.Host(name)
		return &sources.Host{IP: h.IP, Network: prefix}
	}
	tv, nas, mute := host("tv"), host("nas"), host("mute")
	nas.SetName(sources.NameDNS, "nas.lab")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ssdp.New(ssdp.Options{}).Enrich(ctx, []*sources.Host{tv, nas, mute}); err != nil {
		t.Errorf("Enrich: %v", err)
	}
	minidlna := func(name string) *sources.UPnP {
		return &sources.UPnP{FriendlyName: name, Manufacturer: "Justin Maggard", ModelName: "Windows Media Connect compatible (MiniDLNA)"}
	}
	tests := []struct {
		h        *sources.Host
		wantName string
		want     *sources.UPnP
	}{
		{tv, "Living Room TV", minidlna("Living Room TV")},
		{nas, "", minidlna("NAS Media")},
		{mute, "", nil},
	}
	for _, tc := range tests {
		if got := tc.h.Names[sources.NameSSDP]; got != tc.wantName {
			t.Errorf("%v: ssdp name = %q, want %q", tc.h.IP, got, tc.wantName)
		}
		if diff := cmp.Diff(tc.want, tc.h.UPnP); diff != "" {
			t.Errorf("%v: UPnP (-want +got):\n%s", tc.h.IP, diff)
		}
	}
}
