package ingest

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/sources"
)

func sweepOf(fin time.Time, rtt time.Duration, names string) *sources.Sweep {
	pfx := netip.MustParsePrefix("10.0.0.0/24")
	return &sources.Sweep{ScanID: fin.Format("150405"), Started: fin, Finished: fin, Networks: []netip.Prefix{pfx}, Complete: true,
		Hosts: []*sources.Host{
			{IP: netip.MustParseAddr("10.0.0.9"), Network: pfx, Via: sources.ViaICMP, RTT: rtt, MAC: net.HardwareAddr{0, 1, 2, 3, 4, 9}},
			{IP: netip.MustParseAddr("10.0.0.2"), Network: pfx, Via: sources.ViaICMP, RTT: 2 * rtt, MAC: net.HardwareAddr{0, 1, 2, 3, 4, 2},
				Names: map[string]string{"dns": names}},
		}}
}

func TestSweepDifferences(t *testing.T) {
	log := &failingLog{}
	s := NewSink(log)
	inst := sources.Instance{Source: "sweep:lab", Kind: "sweep"}
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	rec := func(sw *sources.Sweep) events.SweepCompleted {
		t.Helper()
		if err := s.Record(context.Background(), sources.Run{Instance: inst, Result: sw}); err != nil {
			t.Fatal(err)
		}
		var p events.SweepCompleted
		if err := events.Default.DecodeInto(log.got[len(log.got)-1], &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := rec(sweepOf(t0, time.Millisecond, "a.lab"))
	if p.Base != 0 || len(p.Hosts) != 2 || p.Same != nil {
		t.Fatalf("first sweep: %+v", p)
	}
	base := p.Hosts
	// Same hosts, new round trips: references only.
	p = rec(sweepOf(t0.Add(time.Minute), 3*time.Millisecond, "a.lab"))
	if p.Base != 1 || len(p.Hosts) != 0 || len(p.Same) != 4 || p.Same[0] != 0 || p.Same[1] != 6000 || p.Same[2] != 1 || p.Same[3] != 3000 {
		t.Fatalf("unchanged sweep: %+v", p)
	}
	got, err := events.ResolveSweep(&p, base)
	if err != nil || len(got) != 2 || got[0].IP != "10.0.0.2" || got[0].RTTMicros != 6000 || got[1].RTTMicros != 3000 || got[0].Names.Map()["dns"] != "a.lab" {
		t.Fatalf("resolved %+v %v", got, err)
	}
	// A renamed host is written whole.
	p = rec(sweepOf(t0.Add(2*time.Minute), time.Millisecond, "b.lab"))
	if p.Base != 2 || len(p.Hosts) != 1 || p.Hosts[0].Names.Map()["dns"] != "b.lab" || len(p.Same) != 2 {
		t.Fatalf("changed sweep: %+v", p)
	}
	// After a failed append, whole again.
	log.fail = true
	if err := s.Record(context.Background(), sources.Run{Instance: inst, Result: sweepOf(t0.Add(3*time.Minute), time.Millisecond, "b.lab")}); err == nil {
		t.Fatal("no error")
	}
	log.fail = false
	if p = rec(sweepOf(t0.Add(4*time.Minute), time.Millisecond, "b.lab")); p.Base != 0 || len(p.Hosts) != 2 {
		t.Fatalf("after a failed append: %+v", p)
	}
	// A reference outside the base is refused.
	bad := events.SweepCompleted{ScanID: "x", Base: 1, Same: []int64{5, 1}}
	if _, err := events.ResolveSweep(&bad, base); err == nil {
		t.Error("a reference outside the base resolved")
	}
}
