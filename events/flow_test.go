package events

import (
	"strings"
	"testing"
	"time"
)

func TestTrafficRecordedRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 1, 0, 0, time.UTC)
	in := TrafficRecorded{
		ScanID: "flowlistener:gw@1", Started: at.Add(-time.Minute), Finished: at, Complete: true, Listen: "[::]:2055",
		Datagrams: 3, Flows: 5, LostFlows: 1, Drops: map[string]uint64{"no_template": 1},
		Exporters: []TrafficExporter{{Addr: "192.0.2.1", Versions: []int{9}, Domains: 1, Templates: 2, Datagrams: 3, Flows: 5, Sampling: 1}},
		Rows:      []TrafficRow{{Src: "192.0.2.10", Dst: "198.51.100.7", Proto: 6, Port: 443, Bytes: 1500, Packets: 10, Flows: 2}},
	}
	e, err := New(KindTrafficRecorded, in, at)
	if err != nil {
		t.Fatal(err)
	}
	// Rows are compact: short keys, no per-flow data.
	if !strings.Contains(string(e.Payload), `{"s":"192.0.2.10","d":"198.51.100.7","p":6,"port":443,"b":1500,"n":10,"f":2}`) {
		t.Fatalf("row not compact: %s", e.Payload)
	}
	got, err := Decode(e)
	if err != nil {
		t.Fatal(err)
	}
	out := got.(*TrafficRecorded)
	if out.Rows[0] != in.Rows[0] || out.Exporters[0].Addr != "192.0.2.1" || out.Drops["no_template"] != 1 || !out.Finished.Equal(at) {
		t.Fatalf("round trip: %+v", out)
	}
}
