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
	}
	for _, e := range w.Exporters {
		p.Exporters = append(p.Exporters, events.TrafficExporter{
			Addr: e.Addr.String(), Versions: e.Versions, Domains: e.Domains, Templates: e.Templates,
			Datagrams: e.Datagrams, Flows: e.Flows, LostFlows: e.LostFlows, Sampling: e.Sampling,
			Restarts: e.Restarts, Held: e.Held,
		})
	}
	// The rows are packed straight from the listener's table into the
	// payload: as []TrafficRow (two strings a row) a window of 166,667
	// rows would hold about 22 MB more while it is handed over. A first
	// walk sizes the payload, so that it is made once.
	size := 0
	for i := range w.NumRows() {
		if a, ok := packable(w, i); ok {
			size += events.PackedRowLen(&a)
		}
	}
	rows, err := events.NewTrafficPacker(p, size)
	if err != nil {
		return events.Envelope{}, fmt.Errorf("ingest: flow window %s: %w", w.ScanID, err)
	}
	for i := range w.NumRows() {
		a, ok := packable(w, i)
		if !ok {
			continue
		}
		if err := rows.Add(&a); err != nil {
			return events.Envelope{}, fmt.Errorf("ingest: flow window %s: %w", w.ScanID, err)
		}
	}
	e, err := rows.Recorded(w.Finished)
	if err != nil {
		return events.Envelope{}, fmt.Errorf("ingest: flow window %s: %w", w.ScanID, err)
	}
	e.Source, e.Actor, e.Stream = source, source, "scan/"+w.ScanID
	return e, nil
}

// packable is row i of w as the packer takes it, ok false for a row
// without both addresses (left out).
func packable(w *sources.FlowWindow, i int) (events.TrafficRowAddrs, bool) {
	r := w.Rows.Row(i)
	if !r.Src.IsValid() || !r.Dst.IsValid() {
		return events.TrafficRowAddrs{}, false
	}
	return events.TrafficRowAddrs{Src: r.Src.WithZone(""), Dst: r.Dst.WithZone(""), Proto: r.Proto, Port: r.Port, Bytes: r.Bytes, Packets: r.Packets, Flows: r.Flows}, true
}
