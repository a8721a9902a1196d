package ingest

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/sources"
)

func TestFlowWindowEvent(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 1, 0, 0, time.FixedZone("x", 3600))
	w := &sources.FlowWindow{
		ScanID: "flowlistener:gw@1", Started: at.Add(-time.Minute), Finished: at, Complete: true, Listen: "[::]:2055", First: true,
		Datagrams: 2, Flows: 3, Drops: map[string]uint64{"not_exporter": 4},
		Exporters: []sources.FlowExporter{{Addr: netip.MustParseAddr("192.0.2.1"), Versions: []int{9}, Sampling: 1, Restarts: 2, Held: 5}},
		Rows: sources.FlowRowList{
			{Src: netip.MustParseAddr("192.0.2.10"), Dst: netip.MustParseAddr("2001:db8::1"), Proto: 6, Port: 443, Bytes: 10, Packets: 1, Flows: 1},
			{}, // no addresses: skipped
		},
	}
	e, err := RunEvent(sources.Run{Instance: sources.Instance{Source: "flowlistener:gw", Kind: "flowlistener"}, Result: w})
	if err != nil {
		t.Fatal(err)
	}
	if e.Kind != events.KindTrafficRecorded || e.Source != "flowlistener:gw" || e.Stream != "scan/flowlistener:gw@1" || !e.Time.Equal(at) {
		t.Fatalf("envelope %+v", e)
	}
	var p events.TrafficRecorded
	if err := events.DecodeInto(e, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Rows) != 1 || p.Rows[0].Dst != "2001:db8::1" || p.Rows[0].Port != 443 || !p.First || p.Drops["not_exporter"] != 4 || p.Exporters[0].Addr != "192.0.2.1" {
		t.Fatalf("payload %+v", p)
	}
	if x := p.Exporters[0]; x.Restarts != 2 || x.Held != 5 {
		t.Fatalf("exporter %+v: want its restarts and held data sets", x)
	}
	if p.Started.Location() != time.UTC {
		t.Fatal("times not in UTC")
	}
}

// appendHook is an Appender that calls fn before it takes the events.
type appendHook struct {
	memLog
	fn func()
}

func (a *appendHook) Append(ctx context.Context, evs ...events.Envelope) ([]events.Envelope, error) {
	a.fn()
	return a.memLog.Append(ctx, evs...)
}

// The sink drops a flow window's rows once they are packed into its
// event, before the append (which copies the event), and the event still
// holds them.
func TestSinkDropsFlowRowsBeforeAppend(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 1, 0, 0, time.UTC)
	w := &sources.FlowWindow{ScanID: "flowlistener:gw@1", Started: at.Add(-time.Minute), Finished: at, Complete: true,
		Rows: sources.FlowRowList{{Src: netip.MustParseAddr("192.0.2.10"), Dst: netip.MustParseAddr("198.51.100.1"), Proto: 17, Port: 53, Bytes: 80, Packets: 1, Flows: 1}}}
	var atAppend sources.FlowRows = sources.FlowRowList{}
	log := &appendHook{}
	log.fn = func() { atAppend = w.Rows }
	if err := NewSink(log).Record(context.Background(), sources.Run{Instance: sources.Instance{Source: "flowlistener:gw", Kind: "flowlistener"}, Result: w}); err != nil {
		t.Fatal(err)
	}
	if atAppend != nil {
		t.Fatalf("the window still held %d rows at the append", atAppend.Len())
	}
	n := 0
	if err := events.EachTrafficRow(log.got[0].Payload, func(r *events.TrafficRowAddrs) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("the event holds %d rows (%v)", n, err)
	}
}

// BenchmarkFlowEvent: the event of a window of 10,000 devices × 1,000
// peers an hour (166,667 rows), the bytes it allocates (the payload, at
// its size, and little beside it).
func BenchmarkFlowEvent(b *testing.B) {
	const n = 166667
	rows := make(sources.FlowRowList, n)
	for i := range rows {
		rows[i] = sources.FlowRow{
			Src: netip.AddrFrom4([4]byte{10, 0, byte(i >> 12), byte(i >> 4)}), Dst: netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}),
			Proto: 6, Port: 443, Bytes: uint64(1500 + i%100000), Packets: uint64(3 + i%50), Flows: 1,
		}
	}
	w := &sources.FlowWindow{ScanID: "flowlistener:bench@1", Started: time.Unix(1e9, 0), Finished: time.Unix(1e9+60, 0), Complete: true, Rows: rows}
	var size int
	for b.Loop() {
		e, err := FlowEvent(w, "flowlistener:bench")
		if err != nil {
			b.Fatal(err)
		}
		size = len(e.Payload)
	}
	b.ReportMetric(float64(size), "payload-B")
}
