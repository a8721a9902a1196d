package ingest

import (
	"fmt"

	"github.com/jocasta/jocasta/events"
	"github.com/jocasta/jocasta/sources"
)

// FlowEvent converts one flow listener window into traffic.recorded.
// Rows keep the listener's order (sorted), so equal windows give equal
// bytes.
func FlowEvent(w *sources.FlowWindow, source string) (events.Envelope, error) {
	p := events.TrafficRecorded{
		ScanID:    w.ScanID,
		Started:   w.Started.UTC(),
		Finished:  w.Finished.UTC(),
		Complete:  w.Complete,
		Errors:    w.Errors,
		Listen:    w.Listen,
		RcvBuf:    w.RcvBuf,
		First:     w.First,
		Final:     w.Final,
		Datagrams: w.Datagrams,
		Flows:     w.Flows,
		LostFlows: w.LostFlows,
		Drops:     w.Drops,
		Exporters: make([]events.TrafficExporter, 0, len(w.Exporters)),
		Rows:      make([]events.TrafficRow, 0, len(w.Rows)),
	}
	for _, e := range w.Exporters {
		p.Exporters = append(p.Exporters, events.TrafficExporter{
			Addr: e.Addr.String(), Versions: e.Versions, Domains: e.Domains, Templates: e.Templates,
			Datagrams: e.Datagrams, Flows: e.Flows, LostFlows: e.LostFlows, Sampling: e.Sampling,
			Restarts: e.Restarts, Held: e.Held,
		})
	}
	for _, r := range w.Rows {
		if !r.Src.IsValid() || !r.Dst.IsValid() {
			continue
		}
		p.Rows = append(p.Rows, events.TrafficRow{
			Src: r.Src.String(), Dst: r.Dst.String(), Proto: r.Proto, Port: r.Port,
			Bytes: r.Bytes, Packets: r.Packets, Flows: r.Flows,
		})
	}
	e, err := events.New(events.KindTrafficRecorded, p, w.Finished)
	if err != nil {
		return events.Envelope{}, fmt.Errorf("ingest: flow window %s: %w", w.ScanID, err)
	}
	e.Source, e.Actor, e.Stream = source, source, "scan/"+w.ScanID
	return e, nil
}
