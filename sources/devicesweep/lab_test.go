package devicesweep

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
	"github.com/jocasta/jocasta/sources/lab"
)

func labSweep(t *testing.T, spec lab.Spec, enrichers ...sources.Enricher) *sources.Sweep {
	t.Helper()
	s, err := New(Config{
		Networks:    []netip.Prefix{spec.Prefix},
		Rate:        1000,
		Rounds:      2,
		Wait:        time.Second,
		ResolveMACs: true,
		Enrichers:   enrichers,
		Logf:        t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sw, err := s.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !sw.Complete || len(sw.Errors) > 0 {
		t.Fatalf("sweep complete=%v errors %q", sw.Complete, sw.Errors)
	}
	return sw
}

type labHost struct {
	ip  netip.Addr
	mac string
	via string
}

// wantHosts is what a sweep of the lab must find: every node, the ones
// that drop ICMP through the neighbour table.
func wantHosts(l *lab.Lab) []labHost {
	want := []labHost{
		{l.Spec.Scanner, l.MAC(lab.NodeScanner).String(), sources.ViaICMP},
		{l.Spec.DNS, l.MAC(lab.NodeDNS).String(), sources.ViaICMP},
	}
	for _, h := range l.Spec.Hosts {
		h, _ = l.Host(h.Name)
		via := sources.ViaICMP
		if h.DropICMP {
			via = sources.ViaNeighbour
		}
		want = append(want, labHost{h.IP, l.MAC(h.Name).String(), via})
	}
	slices.SortFunc(want, func(a, b labHost) int { return a.ip.Compare(b.ip) })
	return want
}

func gotHosts(t *testing.T, sw *sources.Sweep) []labHost {
	var got []labHost
	for _, h := range sw.Hosts {
		got = append(got, labHost{h.IP, h.MAC.String(), h.Via})
		if h.Via == sources.ViaICMP && h.RTT <= 0 || h.Via == sources.ViaNeighbour && h.RTT != 0 || !h.Network.Contains(h.IP) {
			t.Errorf("host %+v", h)
		}
	}
	return got
}

// TestLabDeviceSweep: the host that drops ICMP is found through the
// neighbour table with its (locally administered) MAC, every other host
// through ICMP with its MAC, and the enrichers see them all.
func TestLabDeviceSweep(t *testing.T) {
	l := lab.New(t, lab.DefaultSpec())
	if !l.InScanner(t) {
		return
	}
	var calls []string
	sw := labSweep(t, l.Spec, recorder{"dns", &calls, nil})
	want := wantHosts(l)
	if got := gotHosts(t, sw); !slices.Equal(got, want) {
		t.Errorf("hosts\n%v\nwant\n%v", got, want)
	}
	quiet, _ := l.Host("quiet")
	for _, h := range sw.Hosts {
		if h.IP == quiet.IP && (h.Via != sources.ViaNeighbour || h.MAC.String() != "02:42:0a:4d:00:0d" || h.MAC[0]&2 == 0) {
			t.Errorf("quiet host %+v: want via neighbour with its locally administered MAC", h)
		}
	}
	if len(calls) != 1 || calls[0] != "dns:8" {
		t.Errorf("enricher calls %v", calls)
	}
}

// TestLabMove: a host changes address; the next sweep finds it at the new
// one with the same MAC, and not at the old one.
func TestLabMove(t *testing.T) {
	l := lab.New(t, lab.DefaultSpec())
	if !l.InScanner(t) {
		return
	}
	before, _ := l.Host("laptop")
	sw := labSweep(t, l.Spec)
	if got := gotHosts(t, sw); !slices.Contains(got, labHost{before.IP, l.MAC("laptop").String(), sources.ViaICMP}) {
		t.Fatalf("laptop not found before the move: %v", got)
	}
	newIP := netip.MustParseAddr("10.77.0.200")
	l.Move(t, "laptop", newIP)
	sw = labSweep(t, l.Spec)
	want := wantHosts(l)
	got := gotHosts(t, sw)
	if !slices.Equal(got, want) {
		t.Errorf("after the move: hosts\n%v\nwant\n%v", got, want)
	}
	for _, h := range got {
		if h.ip == before.IP {
			t.Errorf("the old address %v is still reported: %+v", before.IP, h)
		}
	}
}
