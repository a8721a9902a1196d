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

// Sweep modes the lab tests run: the ARP sweep (we are root), and the
// ICMP sweep it falls back to without CAP_NET_RAW.
const (
	modeARP  = "arp"
	modeICMP = "icmp-only"
)

func labSweep(t *testing.T, spec lab.Spec, mode string, enrichers ...sources.Enricher) *sources.Sweep {
	t.Helper()
	var logs []string
	s, err := New(Config{
		Networks:    []netip.Prefix{spec.Prefix},
		Rate:        1000,
		Rounds:      2,
		Wait:        time.Second,
		ResolveMACs: true,
		Enrichers:   enrichers,
		DisableARP:  mode == modeICMP,
		Log: funcLogger(func(m string) {
			t.Log(m)
			logs = append(logs, m)
		}),
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
	want := map[string]string{modeARP: "devicesweep: 10.77.0.0/24: ARP sweep on eth0 from 10.77.0.2, ICMP echo to the hosts that answer",
		modeICMP: "devicesweep: 10.77.0.0/24: ICMP sweep (ARP disabled)"}[mode]
	if !slices.Contains(logs, want) {
		t.Errorf("the sweep mode (%s) was not logged: %q", want, logs)
	}
	return sw
}

type labHost struct {
	ip  netip.Addr
	mac string
	via string
}

// wantHosts is what a sweep of the lab must find: every node. In ICMP
// mode the ones that drop ICMP come from the neighbour table; in ARP mode
// every node answers ARP.
func wantHosts(l *lab.Lab, mode string) []labHost {
	via := func(dropICMP bool) string {
		switch {
		case mode == modeARP:
			return sources.ViaARP
		case dropICMP:
			return sources.ViaNeighbour
		}
		return sources.ViaICMP
	}
	want := []labHost{
		{l.Spec.Scanner, l.MAC(lab.NodeScanner).String(), via(false)},
		{l.Spec.DNS, l.MAC(lab.NodeDNS).String(), via(false)},
	}
	for _, h := range l.Spec.Hosts {
		h, _ = l.Host(h.Name)
		want = append(want, labHost{h.IP, l.MAC(h.Name).String(), via(h.DropICMP)})
	}
	slices.SortFunc(want, func(a, b labHost) int { return a.ip.Compare(b.ip) })
	return want
}

// gotHosts lists what a sweep found and checks each host's RTT: an RTT
// for every host that answers ICMP (in ARP mode too: each responder is
// sent echo requests), none for those that drop it.
func gotHosts(t *testing.T, l *lab.Lab, sw *sources.Sweep) []labHost {
	t.Helper()
	dropsICMP := map[netip.Addr]bool{}
	for _, h := range l.Spec.Hosts {
		h, _ = l.Host(h.Name)
		dropsICMP[h.IP] = h.DropICMP
	}
	var got []labHost
	for _, h := range sw.Hosts {
		got = append(got, labHost{h.IP, h.MAC.String(), h.Via})
		if dropsICMP[h.IP] != (h.RTT == 0) || h.RTT < 0 || h.RTT > 2*time.Second || !h.Network.Contains(h.IP) {
			t.Errorf("host %+v (drops ICMP: %v)", h, dropsICMP[h.IP])
		}
	}
	return got
}

// TestLabDeviceSweep: in both modes every lab node is found with its MAC
// (the host that drops ICMP too, with its locally administered MAC), the
// hosts that answer ICMP with an RTT, and the enrichers see them all. The
// ARP sweep finds the same hosts and MACs as the ICMP sweep.
func TestLabDeviceSweep(t *testing.T) {
	l := lab.New(t, lab.DefaultSpec())
	if !l.InScanner(t) {
		return
	}
	quiet, _ := l.Host("quiet")
	found := map[string][]labHost{}
	for _, mode := range []string{modeICMP, modeARP} {
		t.Run(mode, func(t *testing.T) {
			var calls []string
			sw := labSweep(t, l.Spec, mode, recorder{"dns", &calls, nil})
			want := wantHosts(l, mode)
			got := gotHosts(t, l, sw)
			if !slices.Equal(got, want) {
				t.Errorf("hosts\n%v\nwant\n%v", got, want)
			}
			for _, h := range sw.Hosts {
				if h.IP == quiet.IP && (h.MAC.String() != "02:42:0a:4d:00:0d" || h.MAC[0]&2 == 0) {
					t.Errorf("quiet host %+v: want its locally administered MAC", h)
				}
			}
			if len(calls) != 1 || calls[0] != "dns:8" {
				t.Errorf("enricher calls %v", calls)
			}
			for _, h := range got {
				found[mode] = append(found[mode], labHost{h.ip, h.mac, ""})
			}
			t.Logf("%s: %d hosts, %d probes in %v", mode, len(sw.Hosts), sw.ProbesSent, sw.Finished.Sub(sw.Started))
		})
	}
	if !slices.Equal(found[modeARP], found[modeICMP]) {
		t.Errorf("the ARP sweep found\n%v\nthe ICMP sweep\n%v", found[modeARP], found[modeICMP])
	}
}

// TestLabMove: a host changes address; the next sweep finds it at the new
// one with the same MAC, and not at the old one (in ARP mode the old
// address's neighbour entry is left out: it did not answer).
func TestLabMove(t *testing.T) {
	l := lab.New(t, lab.DefaultSpec())
	if !l.InScanner(t) {
		return
	}
	for i, mode := range []string{modeARP, modeICMP} {
		t.Run(mode, func(t *testing.T) {
			before, _ := l.Host("laptop")
			sw := labSweep(t, l.Spec, mode)
			if got := gotHosts(t, l, sw); !slices.ContainsFunc(got, func(h labHost) bool { return h.ip == before.IP && h.mac == l.MAC("laptop").String() }) {
				t.Fatalf("laptop not found before the move: %v", got)
			}
			newIP := netip.AddrFrom4([4]byte{10, 77, 0, byte(200 + i)})
			l.Move(t, "laptop", newIP)
			sw = labSweep(t, l.Spec, mode)
			want := wantHosts(l, mode)
			got := gotHosts(t, l, sw)
			if !slices.Equal(got, want) {
				t.Errorf("after the move: hosts\n%v\nwant\n%v", got, want)
			}
			for _, h := range got {
				if h.ip == before.IP {
					t.Errorf("the old address %v is still reported: %+v", before.IP, h)
				}
			}
		})
	}
}
