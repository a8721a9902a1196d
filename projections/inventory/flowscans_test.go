package inventory

import (
	"strings"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/projections"
)

// A flow window is a scan: exporters heard, flows, drops and loss in words.
func TestFlowWindowScanRow(t *testing.T) {
	h := newHarness(t, Options{})
	p := events.TrafficRecorded{ScanID: "w1", Started: t0, Finished: t0.Add(time.Minute), Complete: true, Listen: ":2055",
		Datagrams: 120, Flows: 3000, LostFlows: 40, Drops: map[string]uint64{"not_exporter": 7, "malformed": 2},
		Exporters: []events.TrafficExporter{{Addr: "10.0.0.1", Versions: []int{9}, Datagrams: 120, Flows: 3000}},
		Rows:      []events.TrafficRow{{Src: "10.0.0.5", Dst: "8.8.8.8", Proto: 17, Port: 53, Bytes: 900, Packets: 10, Flows: 5}}}
	h.applyEv(h.envelope(events.KindTrafficRecorded, p, p.Finished, "flowlistener:edge", "flowlistener:edge", ""))
	sc, err := h.inv.ListScans(t.Context(), projections.ScanFilter{Limit: 10})
	if err != nil || len(sc.Items) != 1 {
		t.Fatalf("%v %v", sc, err)
	}
	s := sc.Items[0]
	if s.Kind != "flows" || s.Source != "flowlistener:edge" || s.HostsFound != 1 || s.Rows != 3000 || !s.Complete ||
		strings.Join(s.Errors, "; ") != "dropped 9 datagrams (malformed 2, not_exporter 7); estimated 40 flows lost (sequence gaps)" {
		t.Fatalf("%s", js(s))
	}
	if len(h.inv.devs) != 0 {
		t.Error("a flow window made devices")
	}
}
