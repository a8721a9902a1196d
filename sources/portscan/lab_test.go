package portscan

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/jocasta/jocasta/sources/lab"
)

// TestLabPortScan scans every lab node with the preset plus advertised
// ports and finds exactly the listeners the lab started.
func TestLabPortScan(t *testing.T) {
	spec := lab.DefaultSpec()
	l := lab.New(t, spec)
	if !l.InScanner(t) {
		return
	}
	targets := []Target{{IP: spec.Scanner}, {IP: spec.DNS}}
	want := map[netip.Addr][]uint16{
		spec.Scanner: {},
		spec.DNS:     {53}, // dnsmasq answers DNS over TCP too
	}
	for _, h := range spec.Hosts {
		tg := Target{IP: h.IP}
		open := []uint16{}
		for _, p := range h.TCPPorts {
			open = append(open, uint16(p))
		}
		if h.UPnP != "" {
			// minidlna's port is not in the preset; the device advertises it.
			tg.Extra = append(tg.Extra, lab.UPnPPort)
			open = append(open, lab.UPnPPort)
		}
		if h.DNSSD != nil {
			tg.Extra = append(tg.Extra, uint16(h.DNSSD.Port))
		}
		targets = append(targets, tg)
		want[h.IP] = sorted(open...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Scan(ctx, targets, Params{Ports: Preset, Concurrency: 64, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, res.Open, cmpopts.EquateComparable(netip.Addr{})); diff != "" {
		t.Errorf("open ports (-want +got):\n%s", diff)
	}
	if !res.Complete || len(res.Errors) > 0 || res.Targets != len(targets) {
		t.Errorf("complete %v targets %d errors %q", res.Complete, res.Targets, res.Errors)
	}
	t.Logf("%d probes to %d targets in %v", res.ProbesSent, res.Targets, res.Finished.Sub(res.Started))
}
