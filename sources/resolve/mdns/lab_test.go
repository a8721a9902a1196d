package mdns

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/lab"
)

// TestLab asks avahi-daemon 0.8 for host names from the scanner namespace,
// over the real group and port.
func TestLab(t *testing.T) {
	a := netip.MustParseAddr
	prefix := netip.MustParsePrefix("10.77.2.0/24")
	l := lab.New(t, lab.Spec{
		Prefix: prefix, Scanner: a("10.77.2.2"), DNS: a("10.77.2.3"),
		Hosts: []lab.HostSpec{
			{Name: "cam", IP: a("10.77.2.10"), MDNSName: "camera-hall"},
			{Name: "printer", IP: a("10.77.2.11"), MDNSName: "printer-kitchen", DNSName: "printer.lab"},
			{Name: "mute", IP: a("10.77.2.12")},
		},
	})
	if !l.InScanner(t) {
		return
	}
	host := func(name string) *sources.Host {
		h, _ := l.Host(name)
		return &sources.Host{IP: h.IP, Network: prefix}
	}
	cam, printer, mute := host("cam"), host("printer"), host("mute")
	printer.SetName(sources.NameDNS, "printer.lab") // reverse DNS ran first
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := New(Options{}).Enrich(ctx, []*sources.Host{cam, printer, mute}); err != nil {
		t.Errorf("Enrich: %v", err)
	}
	if got := cam.Names[sources.NameMDNS]; got != "camera-hall.local" {
		t.Errorf("cam: mdns name = %q, want camera-hall.local", got)
	}
	if _, ok := printer.Names[sources.NameMDNS]; ok {
		t.Errorf("printer has a reverse DNS name but was asked over mDNS: %v", printer.Names)
	}
	if mute.Named() {
		t.Errorf("mute: named %v", mute.Names)
	}
	// Lookup answers for the printer too, through the same two queries.
	if got, err := New(Options{}).Lookup(ctx, printer.IP); err != nil || got != "printer-kitchen.local" {
		t.Errorf("Lookup(printer) = %q, %v", got, err)
	}
	// Each path alone: unicast only (the group replaced by a port nobody
	// serves), then the QU multicast query only (unicast to port 9).
	uni := New(Options{})
	uni.group4 = netip.AddrPortFrom(a("10.77.2.2"), 9)
	multi := New(Options{})
	multi.port = 9
	for name, r := range map[string]*Resolver{"unicast": uni, "QU multicast": multi} {
		if got, err := r.Lookup(ctx, cam.IP); err != nil || got != "camera-hall.local" {
			t.Errorf("%s only: Lookup(cam) = %q, %v", name, got, err)
		}
	}
}
