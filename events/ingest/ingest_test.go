package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/sources"
)

type memLog struct{ got []events.Envelope }

func (m *memLog) Append(_ context.Context, evs ...events.Envelope) ([]events.Envelope, error) {
	for i := range evs {
		evs[i].Seq = uint64(len(m.got) + 1)
		m.got = append(m.got, evs[i])
	}
	return evs, nil
}

func TestSweepEvent(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.FixedZone("x", 3600))
	mac, _ := net.ParseMAC("AA:BB:CC:00:11:22")
	s := &sources.Sweep{
		ScanID: "s1", Started: t0, Finished: t0.Add(3 * time.Second),
		Networks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}, ProbesSent: 508, Complete: true,
		Hosts: []*sources.Host{
			{IP: netip.MustParseAddr("10.0.0.9"), Network: netip.MustParsePrefix("10.0.0.0/24"), Via: sources.ViaNeighbour},
			{IP: netip.MustParseAddr("10.0.0.2"), Network: netip.MustParsePrefix("10.0.0.0/24"), MAC: mac, RTT: 1500 * time.Microsecond, Via: sources.ViaICMP,
				Names:    map[string]string{"dns": "printer.lab"},
				Services: []sources.Service{{Instance: "Printer", Type: "_ipp._tcp", Port: 631}},
				UPnP:     &sources.UPnP{FriendlyName: "P"}},
		},
	}
	log := &memLog{}
	seq, err := New(log, "sweep:lab").Sweep(context.Background(), s)
	if err != nil || seq != 1 {
		t.Fatalf("seq %d err %v", seq, err)
	}
	e := log.got[0]
	if e.Kind != events.KindSweepCompleted || e.Source != "sweep:lab" || e.Stream != "scan/s1" || !e.Time.Equal(t0.Add(3*time.Second)) || e.Time.Location() != time.UTC {
		t.Fatalf("envelope %+v", e)
	}
	var p events.SweepCompleted
	if err := events.DecodeInto(e, &p); err != nil {
		t.Fatal(err)
	}
	want := []events.SweepHost{
		{IP: "10.0.0.2", Network: "10.0.0.0/24", MAC: "aa:bb:cc:00:11:22", RTTMicros: 1500, Via: "icmp",
			Names: events.NamesOf(map[string]string{"dns": "printer.lab"}), Services: []events.Service{{Instance: "Printer", Type: "_ipp._tcp", Port: 631}},
			UPnP: &events.UPnP{FriendlyName: "P"}},
		{IP: "10.0.0.9", Network: "10.0.0.0/24", Via: "neighbour"},
	}
	if d := cmp.Diff(want, p.Hosts); d != "" {
		t.Fatalf("hosts (-want +got):\n%s", d)
	}
	if p.ProbesSent != 508 || !p.Complete || p.Networks[0] != "10.0.0.0/24" {
		t.Fatalf("payload %+v", p)
	}
}

func TestPortScanEventSortsAndKeepsEmpty(t *testing.T) {
	s := &sources.PortScan{ScanID: "p", Finished: time.Unix(100, 0), Ports: "22,80", Targets: 2, Complete: true,
		Open: map[netip.Addr][]uint16{
			netip.MustParseAddr("10.0.0.3"): {80, 22},
			netip.MustParseAddr("10.0.0.1"): nil,
		}}
	e, err := PortScanEvent(s, "sweep:x")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(json.RawMessage(e.Payload))
	var p events.PortScanCompleted
	json.Unmarshal(b, &p)
	want := []events.PortResult{{IP: "10.0.0.1", Open: []uint16{}}, {IP: "10.0.0.3", Open: []uint16{22, 80}}}
	if d := cmp.Diff(want, p.Results); d != "" {
		t.Fatal(d)
	}
}

func TestSinkRecordsFailedRuns(t *testing.T) {
	var log memLog
	sink := NewSink(&log)
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	run := sources.Run{
		Instance: sources.Instance{Source: "routerapi:core", Kind: "routerapi"},
		Started:  start, Finished: start.Add(10 * time.Second),
		Err: errors.New("GET https://core/rest/ip/arp:\n 401 Unauthorized"),
	}
	if err := sink.Record(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	if len(log.got) != 1 || log.got[0].Kind != events.KindScanFailed || log.got[0].Source != "routerapi:core" {
		t.Fatalf("appended %+v", log.got)
	}
	var p events.ScanFailed
	if err := json.Unmarshal(log.got[0].Payload, &p); err != nil {
		t.Fatal(err)
	}
	if p.Reason != "GET https://core/rest/ip/arp: 401 Unauthorized" || p.Kind != "routerapi" || !p.Started.Equal(start) {
		t.Fatalf("payload %+v", p)
	}
	// A result becomes its kind's event.
	sw := &sources.Sweep{ScanID: "s1", Started: start, Finished: start.Add(time.Second), Complete: true}
	if err := sink.Record(context.Background(), sources.Run{Instance: sources.Instance{Source: "sweep:h", Kind: "sweep"}, Result: sw}); err != nil {
		t.Fatal(err)
	}
	if log.got[1].Kind != events.KindSweepCompleted || log.got[1].Source != "sweep:h" {
		t.Fatalf("sweep appended as %+v", log.got[1])
	}
}
