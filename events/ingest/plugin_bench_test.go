package ingest

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/jocasta/jocasta/sources"
)

// benchRead is a router's 5,000 leases and 5,000 neighbours, merged.
func benchRead(at time.Time) *sources.HostRead {
	r := &sources.HostRead{ScanID: "r", Started: at, Finished: at.Add(time.Second), Complete: true, Rows: 10000,
		Peer: sources.Peer{Name: "core", MACs: []string{"02:00:00:00:ff:01"}}}
	for n := range 5000 {
		r.Hosts = append(r.Hosts, &sources.ReadHost{
			MAC:   fmt.Sprintf("02:00:00:00:%02x:%02x", n>>8, n&0xff),
			IPs:   []netip.Addr{netip.AddrFrom4([4]byte{10, byte(8 + n/1000), byte((n / 250) % 4), byte(n%250 + 2)})},
			Names: map[string]string{"dhcp": fmt.Sprintf("host-%d", n)},
			Seen:  true,
			Port:  "ether3",
		})
	}
	return r
}

// BenchmarkPluginReadUnchanged: the sink's work for one read of a stable
// network of 5,000 hosts (10,000 rows), and the bytes of the event it
// appends per row read (the log-size budget is 60 bytes per unchanged row).
func BenchmarkPluginReadUnchanged(b *testing.B) {
	log := &memLog{}
	s := NewSink(log)
	inst := sources.Instance{Source: "routerapi:core", Kind: "routerapi"}
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	if err := s.Record(context.Background(), sources.Run{Instance: inst, Result: benchRead(at)}); err != nil {
		b.Fatal(err)
	}
	whole := len(log.got[0].Payload)
	reads := make([]*sources.HostRead, 8)
	for i := range reads {
		reads[i] = benchRead(at.Add(time.Duration(i+1) * time.Minute))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; b.Loop(); n++ {
		if err := s.Record(context.Background(), sources.Run{Instance: inst, Result: reads[n%len(reads)]}); err != nil {
			b.Fatal(err)
		}
		log.got = log.got[len(log.got)-1:]
	}
	b.StopTimer()
	last := log.got[len(log.got)-1]
	b.ReportMetric(float64(len(last.Payload))/10000, "event-B/row")
	b.ReportMetric(float64(whole)/10000, "whole-event-B/row")
}
